//! How many layers the wheels go into.
//!
//! Big wheels keep a layer of their own (a torch or CUDA wheel layer is then shared by every
//! image that installs the same wheel, whatever else it has); small wheels share a few layers.
//! Two bounds hold:
//!
//! - **Layer count.** An image has at most [`MAX_IMAGE_LAYERS`] layers in all, base included,
//!   and the wheels at most [`MAX_WHEEL_LAYERS`] of them. 127 is the depth that Docker's aufs
//!   and overlay drivers enforced and that images keep to for containerd's overlay snapshotter,
//!   whose mount options must fit in one page; podman has refused images with hundreds of
//!   layers (nix2container#27). Past the bound, the two smallest wheel layers merge, again and
//!   again: deterministic, and a function of the lock alone.
//! - **Layer size.** No wheel layer holds more than `[python] max-layer-size` bytes of wheels
//!   (default [`DEFAULT_MAX_LAYER_SIZE`], under registries' per-layer limits). A
//!   merge that would pass it is not made; a wheel that alone passes it is an error. So the size
//!   bound never changes a plan that succeeds, only turns an impossible one into an error.

use super::tags::normalize_name;
use crate::digest::Digest;

pub use crate::image::MAX_LAYERS as MAX_IMAGE_LAYERS;
/// The most wheel layers, so the recipe's own layers keep room under [`MAX_IMAGE_LAYERS`].
pub const MAX_WHEEL_LAYERS: usize = 64;

/// Limits for [`plan_layers`].
#[derive(Clone, Copy, Debug)]
pub struct LayerLimits {
    /// A wheel over this many (compressed) bytes gets a layer of its own.
    pub big: u64,
    /// Small wheels are spread over at most this many layers.
    pub small_groups: usize,
    /// At most this many layers in all.
    pub max_layers: usize,
    /// At most this many bytes of wheels in one layer.
    pub max_layer_size: u64,
}

/// The default `[python] max-layer-size`: 5 GB, half of the per-layer limit of GHCR and Docker
/// Hub (10 GB) and below the 8 GB layers users saw refused by other registries.
pub const DEFAULT_MAX_LAYER_SIZE: u64 = 5_000_000_000;

impl Default for LayerLimits {
    fn default() -> Self {
        LayerLimits {
            big: 8 << 20,
            small_groups: 4,
            max_layers: MAX_WHEEL_LAYERS,
            max_layer_size: DEFAULT_MAX_LAYER_SIZE,
        }
    }
}

impl LayerLimits {
    /// The limits for an image whose other layers (base, system and recipe layers) number
    /// `other_layers`. `None` when they leave no room for a wheel layer.
    pub fn for_image(other_layers: usize, max_layer_size: u64) -> Option<LayerLimits> {
        let room = MAX_IMAGE_LAYERS.checked_sub(other_layers)?;
        (room > 0).then(|| LayerLimits {
            max_layers: room.min(MAX_WHEEL_LAYERS),
            max_layer_size,
            ..LayerLimits::default()
        })
    }
}

/// Why the wheels cannot be planned within the limits.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(
        "wheel `{wheel}` is {size} bytes, over the wheel layer size bound of {limit} bytes \
         (`[python] max-layer-size`)"
    )]
    WheelTooBig {
        wheel: String,
        size: u64,
        limit: u64,
    },
    #[error(
        "the wheels need {needed} layers, and merging any two more would pass the wheel layer \
         size bound of {limit} bytes (`[python] max-layer-size`); the image may have {room} \
         wheel layers (at most {MAX_IMAGE_LAYERS} layers in all, base included)"
    )]
    TooManyLayers {
        needed: usize,
        room: usize,
        limit: u64,
    },
    #[error(
        "the {count} small wheels that share a layer with `{first}` hold {size} bytes, over the \
         wheel layer size bound of {limit} bytes (`[python] max-layer-size`)"
    )]
    SmallGroupTooBig {
        first: String,
        count: usize,
        size: u64,
        limit: u64,
    },
    #[error(
        "the image's other layers already number {other} (base, system and recipe layers), \
         which leaves no room for wheel layers under the bound of {MAX_IMAGE_LAYERS}"
    )]
    NoRoom { other: usize },
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

pub fn plan_layers(
    wheels: &[(&str, u64)],
    limits: &LayerLimits,
) -> Result<Vec<Vec<usize>>, PlanError> {
    if let Some((name, size)) = wheels.iter().find(|(_, s)| *s > limits.max_layer_size) {
        return Err(PlanError::WheelTooBig {
            wheel: name.to_string(),
            size: *size,
            limit: limits.max_layer_size,
        });
    }
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
    // A group of small wheels over the size bound (hundreds of them, or a tiny bound) is
    // refused rather than split, so that the bound never changes a plan that succeeds.
    for g in small.into_iter().filter(|g| !g.is_empty()) {
        let sum: u64 = g.iter().map(|&i| wheels[i].1).sum();
        if sum > limits.max_layer_size {
            return Err(PlanError::SmallGroupTooBig {
                first: wheels[g[0]].0.to_string(),
                count: g.len(),
                size: sum,
                limit: limits.max_layer_size,
            });
        }
        groups.push(g);
    }
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
        if total(&groups[a]) + total(&groups[b]) > limits.max_layer_size {
            return Err(PlanError::TooManyLayers {
                needed: groups.len(),
                room: limits.max_layers,
                limit: limits.max_layer_size,
            });
        }
        let moved = groups.remove(b);
        groups[a].extend(moved);
        order(&mut groups);
    }
    for g in &mut groups {
        g.sort_unstable();
    }
    Ok(groups)
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
            max_layer_size: 10_000,
        };
        let w = [
            ("torch", 1000),
            ("numpy", 500),
            ("six", 10),
            ("idna", 20),
            ("click", 30),
            ("scipy", 400),
        ];
        let plan = plan_layers(&w, &l).unwrap();
        assert_eq!(plan.len(), 3);
        let mut all: Vec<usize> = plan.concat();
        all.sort_unstable();
        assert_eq!(all, [0, 1, 2, 3, 4, 5]);
        // The biggest stays alone; the plan is a function of the input.
        assert!(plan.contains(&vec![0]));
        assert_eq!(plan, plan_layers(&w, &l).unwrap());
        let roomy = plan_layers(
            &w,
            &LayerLimits {
                max_layers: 16,
                ..l
            },
        )
        .unwrap();
        assert!(roomy.contains(&vec![1]) && roomy.contains(&vec![5]) && roomy.len() <= 5);
        assert!(plan_layers(&[], &l).unwrap().is_empty());
    }

    #[test]
    fn the_size_bound_never_changes_a_plan_only_refuses_one() {
        let w = [("torch", 800), ("numpy", 500), ("scipy", 400), ("six", 10)];
        let l = LayerLimits {
            big: 100,
            small_groups: 1,
            max_layers: 2,
            max_layer_size: 10_000,
        };
        let plan = plan_layers(&w, &l).unwrap();
        assert_eq!(plan.len(), 2);
        // Merging numpy+scipy+six (910) is fine under 1000, and gives the same plan.
        assert_eq!(
            plan_layers(
                &w,
                &LayerLimits {
                    max_layer_size: 1000,
                    ..l
                }
            )
            .unwrap(),
            plan
        );
        // Under 900 the smallest merge no longer fits.
        let e = plan_layers(
            &w,
            &LayerLimits {
                max_layer_size: 905,
                ..l
            },
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                PlanError::TooManyLayers {
                    needed: 3,
                    room: 2,
                    limit: 905
                }
            ),
            "{e}"
        );
        let e = plan_layers(
            &w,
            &LayerLimits {
                max_layer_size: 799,
                max_layers: 9,
                ..l
            },
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("wheel `torch` is 800 bytes") && e.contains("max-layer-size"),
            "{e}"
        );
        assert!(LayerLimits::for_image(127, 1 << 30).is_none());
        assert_eq!(LayerLimits::for_image(120, 1 << 30).unwrap().max_layers, 7);
        assert_eq!(
            LayerLimits::for_image(3, 1 << 30).unwrap().max_layers,
            MAX_WHEEL_LAYERS
        );
    }

    #[test]
    fn a_small_group_over_the_size_bound_is_refused() {
        let w: Vec<(String, u64)> = (0..10).map(|i| (format!("p{i}"), 50)).collect();
        let w: Vec<(&str, u64)> = w.iter().map(|(n, s)| (n.as_str(), *s)).collect();
        let l = LayerLimits {
            big: 100,
            small_groups: 1,
            max_layers: 64,
            max_layer_size: 200,
        };
        let e = plan_layers(&w, &l).unwrap_err();
        assert!(
            matches!(
                e,
                PlanError::SmallGroupTooBig {
                    count: 10,
                    size: 500,
                    limit: 200,
                    ..
                }
            ),
            "{e}"
        );
        let fits = LayerLimits {
            max_layer_size: 500,
            ..l
        };
        assert_eq!(plan_layers(&w, &fits).unwrap().len(), 1);
    }
}
