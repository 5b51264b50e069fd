//! The dynamic dependencies (`DT_NEEDED`, `DT_RPATH`, `DT_RUNPATH`) of the shared objects a
//! wheel installs, by installed path: what [`crate::cuda::loads`] needs to say which copy of a
//! library the wheel's extensions load. Each member is streamed from the zip (inflated again
//! from its start for each place read, nothing but the headers, the dynamic array and its
//! strings kept), so a 1.5 GB libtorch_cuda.so costs one inflate and no memory.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufReader;

use super::install::{plan_wheel, Source};
use super::wheel::{WheelError, WheelInput};
use super::Interpreter;
use crate::cuda::dynamic::{read_at, read_dynamic, Dynamic};

/// Installed path (no leading `/`) → dependencies, for every member whose name is a shared
/// library's (`*.so`, `*.so.*`) and that is an ELF file; a member the reader cannot make out
/// (not ELF64 little-endian, malformed) is left out: it is nobody's user that can be told.
pub fn wheel_dynamic(
    wheel: &WheelInput,
    interp: &Interpreter,
) -> Result<BTreeMap<String, Dynamic>, WheelError> {
    let io_err = |source| WheelError::Io {
        path: wheel.path.clone(),
        source,
    };
    let zip_err = |source| WheelError::Zip {
        wheel: wheel.file.filename.clone(),
        source,
    };
    let f = fs_err::File::open(&wheel.path).map_err(io_err)?;
    let mut ar = zip::ZipArchive::new(BufReader::with_capacity(64 * 1024, f)).map_err(zip_err)?;
    let items = plan_wheel(&mut ar, wheel, 0, interp, &BTreeSet::new(), None)?;
    let mut out = BTreeMap::new();
    for (path, item) in items {
        let Source::Zip { index, .. } = item.source else {
            continue;
        };
        if !crate::cuda::is_library_name(&path) {
            continue;
        }
        let read = |offset: u64, n: u64| {
            let member = ar.by_index(index).map_err(std::io::Error::other)?;
            read_at(member, offset, n)
        };
        match read_dynamic(read) {
            Ok(Some(d)) => {
                out.insert(path, d);
            }
            Ok(None) | Err(crate::cuda::dynamic::DynamicError::Elf(_)) => {}
            Err(crate::cuda::dynamic::DynamicError::Io(source)) => return Err(io_err(source)),
        }
    }
    Ok(out)
}
