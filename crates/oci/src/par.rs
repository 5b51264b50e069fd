//! Work spread over a few threads, results in input order.

use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` over `items` on up to `n` threads (at least one); the results in input order, whatever
/// the threads' timing. A panic in `f` is the caller's panic.
pub fn map_in_order<T: Sync, R: Send>(items: &[T], n: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..n.min(items.len()).max(1))
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        out.push((i, f(item)));
                    }
                    out
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_input_order_on_any_number_of_threads() {
        let items: Vec<u64> = (0..100).collect();
        for n in [0, 1, 3, 200] {
            let out = map_in_order(&items, n, |&i| {
                // Later items finish first.
                std::thread::sleep(std::time::Duration::from_micros(100 - i));
                i * 2
            });
            assert_eq!(
                out,
                items.iter().map(|i| i * 2).collect::<Vec<_>>(),
                "{n} threads"
            );
        }
        assert!(map_in_order(&[] as &[u8], 4, |_| 1).is_empty());
    }

    #[test]
    #[should_panic(expected = "item 7")]
    fn a_panic_is_not_a_missing_result() {
        let items: Vec<u32> = (0..10).collect();
        map_in_order(&items, 3, |&i| {
            assert!(i != 7, "item 7");
            i
        });
    }
}
