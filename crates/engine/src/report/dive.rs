//! dive's efficiency score and wasted bytes, computed as dive (0.13, `dive/filetree/
//! efficiency.go`) computes them, quirks included, so that the numbers are equal:
//!
//! - each layer is a tree built from its tar entries; only the leaves of a layer's tree are
//!   counted (a directory holding entries of that layer is not), a leaf's size is its header
//!   size (0 for links and directories); opaque whiteouts (`.wh..wh..opq`) are not entries;
//! - a whiteout `.wh.NAME` counts under the path `NAME`: the sizes of every node under `NAME`
//!   in the layers below when `NAME` was a directory there (a directory created only
//!   implicitly, by its children, is not one), else 0; when `NAME` is not found below, the rest
//!   of that layer is not counted (dive stops visiting it) and the path counts -1 as its
//!   smallest size;
//! - a path found in two or more layers is an inefficiency: wasted bytes are the sum of all its
//!   sizes; the score is the sum over all paths of their smallest size over the sum of all
//!   their sizes (1 when that is 0).

use std::collections::{BTreeMap, HashMap};

use super::model::{Efficiency, Inefficiency, LeftOut, MAX_LISTED};
use super::scan::{Kind, LayerScan};

const WHITEOUT: &str = ".wh.";
const OPAQUE: &str = ".wh..wh..";

/// A node's payload, as dive's `FileInfo` (what the score reads of it).
#[derive(Clone, Copy, Debug, Default)]
struct Info {
    size: i64,
    is_dir: bool,
}

#[derive(Clone, Debug, Default)]
struct Node {
    info: Info,
    children: BTreeMap<String, Node>,
}

impl Node {
    /// dive's `AddPath`: intermediate nodes get an empty payload; an opaque-whiteout
    /// component ends the walk without adding anything.
    fn add_path(&mut self, path: &str, info: Info) {
        let names: Vec<&str> = path.split('/').filter(|n| !n.is_empty()).collect();
        let mut node = self;
        for (i, name) in names.iter().enumerate() {
            if !node.children.contains_key(*name) {
                if name.starts_with(OPAQUE) {
                    return;
                }
                node.children.insert((*name).to_string(), Node::default());
            }
            let Some(next) = node.children.get_mut(*name) else {
                return;
            };
            node = next;
            if i + 1 == names.len() {
                node.info = info;
            }
        }
    }

    fn get(&self, path: &str) -> Option<&Node> {
        let mut node = self;
        for name in path.split('/').filter(|n| !n.is_empty()) {
            node = node.children.get(name)?;
        }
        Some(node)
    }

    fn remove(&mut self, path: &str) {
        let names: Vec<&str> = path.split('/').filter(|n| !n.is_empty()).collect();
        let Some((last, parents)) = names.split_last() else {
            return;
        };
        let mut node = self;
        for name in parents {
            let Some(next) = node.children.get_mut(*name) else {
                return;
            };
            node = next;
        }
        node.children.remove(*last);
    }

    /// The sizes of this node and of every node under it.
    fn subtree_size(&self) -> i64 {
        self.info.size + self.children.values().map(Node::subtree_size).sum::<i64>()
    }
}

/// dive's `Path()`: the parents' names as they are, the node's own without `.wh.`.
fn node_path(parents: &[&str], name: &str) -> String {
    let mut p = String::from("/");
    for n in parents {
        p.push_str(n);
        p.push('/');
    }
    p.push_str(name.strip_prefix(WHITEOUT).unwrap_or(name));
    p.replace("//", "/")
}

/// Visit `node`'s descendants children first, in name order; `visit(parents, name, node)`
/// returns false to stop.
fn visit<'a>(
    node: &'a Node,
    parents: &mut Vec<&'a str>,
    visit_fn: &mut dyn FnMut(&[&str], &str, &Node) -> bool,
) -> bool {
    for (name, child) in &node.children {
        parents.push(name);
        let go_on = visit(child, parents, visit_fn);
        parents.pop();
        if !go_on || !visit_fn(parents, name, child) {
            return false;
        }
    }
    true
}

/// dive's `Stack`: `upper` grafted onto `tree` (whiteouts remove, others add).
fn stack(tree: &mut Node, upper: &Node) {
    let mut ops: Vec<(bool, String, Info)> = Vec::new();
    visit(upper, &mut Vec::new(), &mut |parents, name, node| {
        ops.push((
            name.starts_with(WHITEOUT),
            node_path(parents, name),
            node.info,
        ));
        true
    });
    for (whiteout, path, info) in ops {
        if whiteout {
            tree.remove(&path);
        } else {
            tree.add_path(&path, info);
        }
    }
}

fn layer_tree(scan: &LayerScan) -> Node {
    let mut root = Node::default();
    for e in &scan.entries {
        if e.path == "." {
            continue;
        }
        let info = Info {
            size: i64::try_from(e.size).unwrap_or(i64::MAX),
            is_dir: e.kind == Kind::Dir,
        };
        root.add_path(&e.path, info);
    }
    root
}

#[derive(Default)]
struct PathData {
    cumulative: i64,
    min: i64,
    nodes: u64,
}

/// The efficiency of the image whose layers are `layers` (bottom first).
pub fn efficiency(layers: &[LayerScan]) -> Efficiency {
    let trees: Vec<Node> = layers.iter().map(layer_tree).collect();
    let mut data: HashMap<String, PathData> = HashMap::new();
    // dive's StackTreeRange(trees, 0, i-1): a copy of the first tree with trees 0..i stacked.
    let mut below: Option<Node> = None;
    for (i, tree) in trees.iter().enumerate() {
        let stacked: &Node = match (i, &mut below) {
            (0, _) => &trees[0],
            (_, slot) => {
                let mut t = slot.take().unwrap_or_else(|| trees[0].clone());
                stack(&mut t, &trees[i - 1]);
                &*slot.insert(t)
            }
        };
        visit(tree, &mut Vec::new(), &mut |parents, name, node| {
            if !node.children.is_empty() {
                return true;
            }
            let path = node_path(parents, name);
            let d = data.entry(path.clone()).or_insert(PathData {
                min: -1,
                ..PathData::default()
            });
            let size = if name.starts_with(WHITEOUT) {
                match stacked.get(&path) {
                    None => return false,
                    Some(prev) if prev.info.is_dir => prev.subtree_size(),
                    Some(_) => 0,
                }
            } else {
                node.info.size
            };
            d.cumulative += size;
            if d.min < 0 || size < d.min {
                d.min = size;
            }
            d.nodes += 1;
            true
        });
    }
    summarise(data)
}

fn summarise(data: HashMap<String, PathData>) -> Efficiency {
    let minimum: i64 = data.values().map(|d| d.min).sum();
    let discovered: i64 = data.values().map(|d| d.cumulative).sum();
    let score = if discovered == 0 {
        1.0
    } else {
        minimum as f64 / discovered as f64
    };
    let mut inefficient: Vec<Inefficiency> = data
        .into_iter()
        .filter(|(_, d)| d.nodes >= 2)
        .map(|(path, d)| Inefficiency {
            path,
            count: d.nodes,
            bytes: u64::try_from(d.cumulative).unwrap_or(0),
        })
        .collect();
    let wasted_bytes = inefficient.iter().map(|i| i.bytes).sum();
    inefficient.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.path.cmp(&b.path)));
    let rest = inefficient.split_off(inefficient.len().min(MAX_LISTED));
    Efficiency {
        score,
        wasted_bytes,
        inefficient,
        inefficient_left_out: LeftOut {
            count: rest.len() as u64,
            bytes: rest.iter().map(|i| i.bytes).sum(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::scan::Entry;

    fn layer(entries: &[(&str, Kind, u64)]) -> LayerScan {
        LayerScan {
            entries: entries
                .iter()
                .map(|(p, k, s)| Entry {
                    path: (*p).to_string(),
                    kind: *k,
                    size: *s,
                    content: None,
                })
                .collect(),
            ..LayerScan::default()
        }
    }

    #[test]
    fn one_layer_is_fully_efficient() {
        let e = efficiency(&[layer(&[("a", Kind::Dir, 0), ("a/b", Kind::File, 10)])]);
        assert_eq!(e.score, 1.0);
        assert_eq!(e.wasted_bytes, 0);
    }

    #[test]
    fn overwritten_and_removed_files_waste_their_bytes() {
        let e = efficiency(&[
            layer(&[
                ("a", Kind::Dir, 0),
                ("a/b", Kind::File, 10),
                ("c", Kind::File, 30),
            ]),
            layer(&[
                ("a", Kind::Dir, 0),
                ("a/b", Kind::File, 20),
                (".wh.c", Kind::File, 0),
            ]),
        ]);
        // a/b: 10 + 20 (min 10); c: 30 + 0 (min 0).
        assert_eq!(e.wasted_bytes, 60);
        assert_eq!(e.score, 10.0 / 60.0);
        let paths: Vec<&str> = e.inefficient.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(paths, ["/a/b", "/c"]);
    }

    #[test]
    fn a_removed_directory_costs_what_was_under_it() {
        let e = efficiency(&[
            layer(&[
                ("d", Kind::Dir, 0),
                ("d/x", Kind::File, 5),
                ("d/y", Kind::File, 7),
            ]),
            layer(&[(".wh.d", Kind::File, 0)]),
        ]);
        // /d/x and /d/y once each; /d was no leaf below, so its 12 bytes count once too.
        assert_eq!(e.wasted_bytes, 0);
        assert_eq!(e.score, 1.0);
        assert!(e.inefficient.is_empty());
    }

    #[test]
    fn a_whiteout_of_nothing_stops_the_layer() {
        let e = efficiency(&[
            layer(&[("a", Kind::File, 4)]),
            layer(&[(".wh.0", Kind::File, 0), ("z", Kind::File, 8)]),
        ]);
        // /0: min -1, /a: 4, /z never counted.
        assert_eq!(e.score, 3.0 / 4.0);
    }
}
