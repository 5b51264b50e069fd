//! How many layers the wheels go into.

use super::tags::normalize_name;
use crate::digest::Digest;

/// Limits for [`plan_layers`].
#[derive(Clone, Copy, Debug)]
pub struct LayerLimits {
    /// A wheel over this many (compressed) bytes gets a layer of its own.
    pub big: u64,
    /// Small wheels are spread over at most this many layers.
    pub small_groups: usize,
    /// At most this many layers in all.
    pub max_layers: usize,
}

impl Default for LayerLimits {
    fn default() -> Self {
        LayerLimits {
            big: 8 << 20,
            small_groups: 4,
            max_layers: 16,
        }
    }
}

/// Groups wheels `(name, size)` into layers: indices into `wheels`, each group ascending, the
/// groups ordered by their first wheel's name. A wheel over `limits.big` is alone; small ones
/// go to one of `limits.small_groups` groups chosen by a hash of their normalized name (so
/// adding or removing a wheel leaves the other groups, and their cached layers, as they were).
/// While there are more than `max_layers` groups, the two smallest merge.
/// The layer name of a group of wheels (project names, in group order): `wheel-NAME` for one,
/// `wheels-FIRST-and-N-more` for several. The SBOM finds each wheel's layer by this name.
pub fn group_name(names: &[&str]) -> String {
    match names {
        [one] => format!("wheel-{one}"),
        [] => "wheels".to_string(),
        many => format!("wheels-{}-and-{}-more", many[0], many.len() - 1),
    }
}

/// Whether a layer name is one [`group_name`] gives.
pub fn is_wheel_layer(name: &str) -> bool {
    name.starts_with("wheel-") || name.starts_with("wheels-") || name == "wheels"
}

pub fn plan_layers(wheels: &[(&str, u64)], limits: &LayerLimits) -> Vec<Vec<usize>> {
    let n_small = limits.small_groups.max(1);
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut small: Vec<Vec<usize>> = vec![Vec::new(); n_small];
    for (i, (name, size)) in wheels.iter().enumerate() {
        if *size > limits.big {
            groups.push(vec![i]);
        } else {
            let h = Digest::of(normalize_name(name).as_bytes());
            let b = u64::from_be_bytes(h.as_bytes()[..8].try_into().unwrap_or([0; 8]));
            small[(b % n_small as u64) as usize].push(i);
        }
    }
    groups.extend(small.into_iter().filter(|g| !g.is_empty()));
    let key = |i: usize| (normalize_name(wheels[i].0), wheels[i].0.to_string(), i);
    let total = |g: &Vec<usize>| g.iter().map(|&i| wheels[i].1).sum::<u64>();
    let order = |groups: &mut Vec<Vec<usize>>| {
        for g in groups.iter_mut() {
            g.sort_by_key(|&i| key(i));
        }
        groups.sort_by_key(|g| g.first().map(|&i| key(i)));
    };
    order(&mut groups);
    while groups.len() > limits.max_layers.max(1) {
        // The two smallest (ties: the earlier group) merge into the first of them.
        let mut idx: Vec<usize> = (0..groups.len()).collect();
        idx.sort_by_key(|&g| (total(&groups[g]), g));
        let (a, b) = (idx[0].min(idx[1]), idx[0].max(idx[1]));
        let moved = groups.remove(b);
        groups[a].extend(moved);
        order(&mut groups);
    }
    for g in groups.iter_mut() {
        g.sort_unstable();
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_plans() {
        let l = LayerLimits {
            big: 100,
            small_groups: 2,
            max_layers: 3,
        };
        let w = [
            ("torch", 1000),
            ("numpy", 500),
            ("six", 10),
            ("idna", 20),
            ("click", 30),
            ("scipy", 400),
        ];
        let plan = plan_layers(&w, &l);
        assert_eq!(plan.len(), 3);
        let mut all: Vec<usize> = plan.concat();
        all.sort_unstable();
        assert_eq!(all, [0, 1, 2, 3, 4, 5]);
        // The biggest stays alone; the plan is a function of the input.
        assert!(plan.contains(&vec![0]));
        assert_eq!(plan, plan_layers(&w, &l));
        let roomy = plan_layers(
            &w,
            &LayerLimits {
                max_layers: 16,
                ..l
            },
        );
        assert!(roomy.contains(&vec![1]) && roomy.contains(&vec![5]) && roomy.len() <= 5);
        assert!(plan_layers(&[], &l).is_empty());
    }
}
