//! The recipe: `recipe::parse` on arbitrary text, in a directory with a small app tree (so
//! `[[layer]]` sources and ignore files can resolve), and the error's location and message.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

/// A directory with `app/` (a file, a `.dockerignore`), `ignore` and `requirements.txt`.
fn dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = tempfile::Builder::new()
            .prefix("fuzz-recipe-")
            .tempdir()
            .expect("tempdir")
            .keep();
        std::fs::create_dir_all(d.join("app/sub")).expect("mkdir");
        std::fs::write(d.join("app/main.py"), "print(1)\n").expect("write");
        std::fs::write(d.join("app/.dockerignore"), "*.pyc\n!keep.pyc\nsub/**\n").expect("write");
        std::fs::write(d.join("ignore"), "# comment\n*.log\n/build\n").expect("write");
        std::fs::write(d.join("requirements.txt"), "").expect("write");
        std::fs::write(d.join("pylock.toml"), "").expect("write");
        d
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The recipe reads the files it names (layer sources' metadata, ignore files): keep it
    // away from device files and the like, whatever the spelling (TOML escapes included).
    for word in ["dev", "proc", "sys", "\\u", "\\U", "\\x"] {
        if text.contains(word) {
            return;
        }
    }
    let path = Path::new("fuzz.toml");
    match ocibuild::recipe::parse(text, path, dir()) {
        Ok(r) => {
            let _ = r.image.reference();
            let _ = format!("{r:?}");
        }
        Err(e) => {
            let _ = e.to_string();
            if let Some((line, col)) = e.location() {
                assert!(line >= 1 && col >= 1, "location {line}:{col} for {e}");
            }
        }
    }
});
