//! Which copy of a shared library a program loads, when an earlier part of the image (the
//! base, the apt layer) and a wheel both ship it: the base-versus-wheels lint of issue 39.
//!
//! For an ELF file that needs a soname (`DT_NEEDED`), glibc's loader (ld.so(8), "Rules") looks
//! in order at: the file's `DT_RPATH`, only when it has no `DT_RUNPATH`; `LD_LIBRARY_PATH`;
//! the file's `DT_RUNPATH`; then `/etc/ld.so.cache` and the default directories. `$ORIGIN` (or
//! `${ORIGIN}`) is the directory of the file. The first directory that holds the soname wins.
//! [`resolve`] walks that order over the directories where the image has a copy; a directory
//! holding no copy is passed over, as the loader does. Directories are compared after `.` and
//! `..` are taken out and the top-level merged-/usr links (`/lib` → `/usr/lib`, `/lib64`,
//! `/bin`, `/sbin`) are followed, which is what Debian 12 and later images have; other
//! symlinked directories (`/usr/local/cuda` → `cuda-12.4`) are compared as written.
//!
//! What this cannot see: a library loaded with `dlopen` by path (torch's preloading of the
//! nvidia wheels, cuda-pathfinder) or by name, and a soname already loaded by an earlier
//! library, which the loader reuses. The test stage sees those: a `[[test]]` can print what
//! `/proc/self/maps` holds (recipes/cupy-cublas.toml does).

use super::dynamic::Dynamic;

/// One copy of the library: where it comes from (`wheel`, `base`, `apt`) and its absolute path.
#[derive(Clone, Copy, Debug)]
pub struct Copy<'a> {
    pub origin: &'a str,
    pub path: &'a str,
}

/// `path` without `.`, `..` and empty components, the merged-/usr links followed; absolute.
pub fn canonical_dir(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    if matches!(
        parts.first(),
        Some(&("lib" | "lib64" | "lib32" | "bin" | "sbin"))
    ) {
        parts.insert(0, "usr");
    }
    format!("/{}", parts.join("/"))
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("/", |(d, _)| d)
}

/// `dir` with `$ORIGIN` expanded for a file in `origin`; `None` for another dynamic string
/// token (`$LIB`, `$PLATFORM`), which depends on the machine that runs it.
fn expand(dir: &str, origin: &str) -> Option<String> {
    let d = dir.replace("${ORIGIN}", origin).replace("$ORIGIN", origin);
    if d.contains('$') {
        return None;
    }
    // A relative entry is taken from the process's working directory: unknown here.
    d.starts_with('/').then(|| canonical_dir(&d))
}

/// Which of `copies` the ELF file at `user` (absolute path), with dependencies `deps`, loads for
/// the soname it needs, and through what (`RUNPATH $ORIGIN/../lib`, `LD_LIBRARY_PATH /x`, `the
/// loader's cache`). `None` when the loader's search reaches none of them: the loader's cache
/// and default directories then hold no copy (every copy is a wheel's, none on that search).
pub fn resolve(
    user: &str,
    deps: &Dynamic,
    ld_library_path: &[String],
    copies: &[Copy<'_>],
) -> (Option<usize>, String) {
    let origin = canonical_dir(parent(user));
    let dirs: Vec<String> = copies
        .iter()
        .map(|c| canonical_dir(parent(c.path)))
        .collect();
    let rpath: &[String] = if deps.runpath.is_empty() {
        &deps.rpath
    } else {
        &[]
    };
    let order = rpath
        .iter()
        .map(|d| ("RPATH", d))
        .chain(ld_library_path.iter().map(|d| ("LD_LIBRARY_PATH", d)))
        .chain(deps.runpath.iter().map(|d| ("RUNPATH", d)));
    for (how, raw) in order {
        let Some(dir) = expand(raw, &origin) else {
            continue;
        };
        if let Some(i) = dirs.iter().position(|d| *d == dir) {
            return (Some(i), format!("{how} {raw}"));
        }
    }
    // The loader's cache: ldconfig lists the system's copies (the base's or a package's), not
    // a wheel's in site-packages.
    match copies.iter().position(|c| c.origin != "wheel") {
        Some(i) => (Some(i), "the loader's cache (ld.so.cache)".to_string()),
        None => (None, "not on the loader's search path".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SITE: &str = "/usr/local/lib/python3.13/dist-packages";

    fn deps(rpath: &[&str], runpath: &[&str]) -> Dynamic {
        Dynamic {
            needed: vec!["libcublas.so.12".into()],
            rpath: rpath.iter().map(std::string::ToString::to_string).collect(),
            runpath: runpath
                .iter()
                .map(std::string::ToString::to_string)
                .collect(),
        }
    }

    fn copies(wheel: &str) -> [Copy<'_>; 2] {
        [
            Copy {
                origin: "base",
                path: "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcublas.so.12",
            },
            Copy {
                origin: "wheel",
                path: wheel,
            },
        ]
    }

    #[test]
    fn the_loader_order_decides() {
        let wheel = format!("{SITE}/nvidia/cublas/lib/libcublas.so.12");
        let user = format!("{SITE}/torch/lib/libtorch_cuda.so");
        let c = copies(&wheel);
        let runpath = deps(&[], &["$ORIGIN/../../nvidia/cublas/lib", "$ORIGIN"]);
        // RUNPATH reaches the wheel's copy.
        assert_eq!(
            resolve(&user, &runpath, &[], &c),
            (
                Some(1),
                "RUNPATH $ORIGIN/../../nvidia/cublas/lib".to_string()
            )
        );
        // LD_LIBRARY_PATH comes before RUNPATH: the base's copy.
        let llp = vec![
            "/usr/local/nvidia/lib64".to_string(),
            "/usr/local/cuda-12.4/targets/x86_64-linux/lib/".to_string(),
        ];
        assert_eq!(resolve(&user, &runpath, &llp, &c).0, Some(0));
        // ...but not before RPATH (without RUNPATH).
        let rpath = deps(&["${ORIGIN}/../../nvidia/cublas/lib"], &[]);
        assert_eq!(resolve(&user, &rpath, &llp, &c).0, Some(1));
        // RPATH is ignored where RUNPATH is present.
        let both = deps(&["$ORIGIN/../../nvidia/cublas/lib"], &["/nowhere"]);
        assert_eq!(
            resolve(&user, &both, &[], &c),
            (Some(0), "the loader's cache (ld.so.cache)".to_string())
        );
        // Nothing reaches the wheel: the system's copy.
        assert_eq!(resolve(&user, &deps(&[], &[]), &[], &c).0, Some(0));
        // Only wheels' copies, none on the search: none found.
        assert_eq!(resolve(&user, &deps(&[], &[]), &[], &c[1..]).0, None);
        // `$LIB` and relative entries are passed over.
        assert_eq!(
            resolve(&user, &deps(&["$LIB/x", "lib"], &[]), &[], &c).0,
            Some(0)
        );
    }

    #[test]
    fn directories_are_compared_canonically() {
        assert_eq!(
            canonical_dir("/lib/x86_64-linux-gnu/"),
            "/usr/lib/x86_64-linux-gnu"
        );
        assert_eq!(canonical_dir("/a/./b/../c//d"), "/a/c/d");
        assert_eq!(canonical_dir("/../.."), "/");
        let c = [Copy {
            origin: "apt",
            path: "/usr/lib/x86_64-linux-gnu/libcublas.so.12",
        }];
        let llp = vec!["/lib/x86_64-linux-gnu".to_string()];
        assert_eq!(
            resolve("/opt/x.so", &deps(&[], &[]), &llp, &c),
            (Some(0), "LD_LIBRARY_PATH /lib/x86_64-linux-gnu".to_string())
        );
    }
}
