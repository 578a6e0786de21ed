//! The shared fixtures every framework serves: static files, pastes and the template.
//!
//! Frameworks never touch the file system on their own for pastes: they call
//! [`Fixtures::paste`], which validates the name first. The static route uses each framework's
//! own static-file facility with `io=disk`, and [`Fixtures::static_file`] with `io=memory`.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context as _};
use bytes::Bytes;
use serde::Serialize;

use crate::options::Io;

/// The fixtures folder compiled into the binary, file by file (40 KB): what
/// [`Fixtures::default_dir`] falls back on where the source tree is not. A test checks that it
/// holds every file of `fixtures/`, byte for byte.
const EMBEDDED: &[(&str, &[u8])] = &[
    (
        "expected/template.html",
        include_bytes!("../fixtures/expected/template.html"),
    ),
    ("pastes/mysrc", include_bytes!("../fixtures/pastes/mysrc")),
    ("secret.txt", include_bytes!("../fixtures/secret.txt")),
    (
        "static/webupload.html",
        include_bytes!("../fixtures/static/webupload.html"),
    ),
    (
        "templates/page.html",
        include_bytes!("../fixtures/templates/page.html"),
    ),
];

/// `fixtures/` beside the running executable (beside `target/release/` for a test binary in
/// `deps/`).
fn beside_executable() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let mut dir = exe.parent()?;
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir = dir.parent()?;
    }
    Some(dir.join("fixtures"))
}

/// Writes [`EMBEDDED`] into `parent/framebench-fixtures-HASH/` (the hash of its contents) unless
/// it is there already, and returns that folder. Written into a scratch folder first and
/// renamed, so a concurrent run never reads half of it.
pub(crate) fn unpack_embedded(parent: &Path) -> std::io::Result<PathBuf> {
    // FNV-1a over every name and content: the folder of another build's fixtures differs.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, bytes) in EMBEDDED {
        for b in name.bytes().chain([0]).chain(bytes.iter().copied()) {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    let dir = parent.join(format!("framebench-fixtures-{hash:016x}"));
    if dir.is_dir() {
        return Ok(dir);
    }
    let scratch = parent.join(format!(
        ".framebench-fixtures-{hash:016x}.{}",
        std::process::id()
    ));
    for (name, bytes) in EMBEDDED {
        let path = scratch.join(name);
        if let Some(d) = path.parent() {
            fs::create_dir_all(d)?;
        }
        fs::write(path, bytes)?;
    }
    // Another process may have renamed its copy first: then ours is not needed.
    if fs::rename(&scratch, &dir).is_err() && dir.is_dir() {
        let _ = fs::remove_dir_all(&scratch);
    }
    if dir.is_dir() {
        Ok(dir)
    } else {
        Err(std::io::Error::other(format!(
            "cannot unpack the fixtures into {}",
            dir.display()
        )))
    }
}

/// Environment variable that points framebench at another fixtures folder.
pub(crate) const FIXTURES_ENV: &str = "FRAMEBENCH_FIXTURES";

/// The loaded fixtures folder.
pub struct Fixtures {
    root: PathBuf,
    static_dir: PathBuf,
    paste_dir: PathBuf,
    static_mem: HashMap<String, Bytes>,
    paste_mem: HashMap<String, Bytes>,
    templates: minijinja::Environment<'static>,
    page: minijinja::Value,
}

/// Why a static file or paste was not served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Miss {
    /// The name could climb out of its folder or is otherwise not a plain file name: 400.
    BadName,
    /// No such file: 404.
    NotFound,
}

impl Miss {
    /// The HTTP status this miss is answered with.
    pub(crate) fn status(self) -> u16 {
        match self {
            Miss::BadName => 400,
            Miss::NotFound => 404,
        }
    }
}

#[derive(Serialize)]
struct Entry {
    name: &'static str,
    note: &'static str,
}

#[derive(Serialize)]
struct Page {
    title: &'static str,
    intro: &'static str,
    entries: Vec<Entry>,
}

/// The data the template renders. Built once at startup; several entries must be HTML-escaped.
fn page() -> Page {
    let e = |name, note| Entry { name, note };
    Page {
        title: "Pastes & snippets",
        intro: "Ten recent pastes. Names are user input, so \"everything\" is escaped <always>.",
        entries: vec![
            e("mysrc", "A tiny paste store in Rust"),
            e(
                "<script>alert('xss')</script>",
                "must render as text, not run",
            ),
            e("Tom & Jerry", "ampersand in a name"),
            e("\"quoted\"", "double quotes"),
            e("it's", "a single quote"),
            e("naïve café", "Latin-1 range text"),
            e("日本語のテキスト", "CJK text"),
            e("Ünïcödé → ✓", "arrows and marks"),
            e("a<b && c>d", "operators"),
            e("plain", "nothing to escape"),
        ],
    }
}

impl Fixtures {
    /// The fixtures folder, the first of: `$FRAMEBENCH_FIXTURES`; a `fixtures/` beside the
    /// executable (a copied binary with its fixtures); the crate's own `fixtures/` (a
    /// checkout); the fixtures compiled into the binary, unpacked once into a temporary folder
    /// ([`unpack_embedded`]): a binary copied alone to a machine without the source tree still
    /// serves every scenario, `io=disk` and the traversal checks included, which read real
    /// files.
    pub(crate) fn default_dir() -> PathBuf {
        if let Some(dir) = std::env::var_os(FIXTURES_ENV) {
            return PathBuf::from(dir);
        }
        if let Some(beside) = beside_executable().filter(|d| d.is_dir()) {
            return beside;
        }
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        if source.is_dir() {
            return source;
        }
        unpack_embedded(&std::env::temp_dir()).unwrap_or(source)
    }

    /// Loads the fixtures from the default folder.
    pub fn load_default() -> anyhow::Result<Arc<Fixtures>> {
        Self::load(&Self::default_dir())
    }

    /// Loads `root`: reads every static file and paste into memory and compiles the template.
    pub(crate) fn load(root: &Path) -> anyhow::Result<Arc<Fixtures>> {
        if !root.is_dir() {
            bail!(
                "fixtures folder not found: {} (set {FIXTURES_ENV} or run from the repository)",
                root.display()
            );
        }
        let root = root
            .canonicalize()
            .with_context(|| format!("cannot resolve fixtures folder {}", root.display()))?;
        let static_dir = root.join("static");
        let paste_dir = root.join("pastes");
        let static_mem = read_flat_dir(&static_dir)?;
        let paste_mem = read_flat_dir(&paste_dir)?;
        let source = fs::read_to_string(root.join("templates/page.html"))
            .with_context(|| format!("missing template {}/templates/page.html", root.display()))?;
        let mut templates = minijinja::Environment::new();
        // Compiled once here; requests only render.
        templates
            .add_template_owned("page.html", source)
            .context("template does not compile")?;
        let page = minijinja::Value::from(minijinja::value::Serde(page()));
        Ok(Arc::new(Fixtures {
            root,
            static_dir,
            paste_dir,
            static_mem,
            paste_mem,
            templates,
            page,
        }))
    }

    /// The fixtures folder itself.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The folder behind `/static/`.
    pub(crate) fn static_dir(&self) -> &Path {
        &self.static_dir
    }

    /// Reads a fixture file by its path relative to the root (used by the oracle).
    pub fn read(&self, rel: &str) -> anyhow::Result<Bytes> {
        let path = self.root.join(rel);
        fs::read(&path)
            .map(Bytes::from)
            .with_context(|| format!("missing fixture {}", path.display()))
    }

    /// Renders the template page. Every framework calls this, so the output is byte-identical.
    pub(crate) fn render(&self) -> String {
        self.templates
            .get_template("page.html")
            .and_then(|t| t.render(&self.page))
            .expect("template compiled at startup renders")
    }

    /// A paste by name, from disk or memory.
    pub(crate) fn paste(&self, name: &str, io: Io) -> Result<Bytes, Miss> {
        lookup(&self.paste_dir, &self.paste_mem, name, io)
    }

    /// A static file by name, from disk or memory. Used by the hyper app and every `io=memory`
    /// static route.
    pub(crate) fn static_file(&self, name: &str, io: Io) -> Result<Bytes, Miss> {
        lookup(&self.static_dir, &self.static_mem, name, io)
    }
}

fn lookup(dir: &Path, mem: &HashMap<String, Bytes>, name: &str, io: Io) -> Result<Bytes, Miss> {
    if !safe_name(name) {
        return Err(Miss::BadName);
    }
    match io {
        Io::Memory => mem.get(name).cloned().ok_or(Miss::NotFound),
        Io::Disk => fs::read(dir.join(name))
            .map(Bytes::from)
            .map_err(|_| Miss::NotFound),
    }
}

fn read_flat_dir(dir: &Path) -> anyhow::Result<HashMap<String, Bytes>> {
    let mut files = HashMap::new();
    let entries =
        fs::read_dir(dir).with_context(|| format!("missing fixtures folder {}", dir.display()))?;
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            if let Some(name) = entry.file_name().to_str() {
                files.insert(name.to_owned(), Bytes::from(fs::read(entry.path())?));
            }
        }
    }
    Ok(files)
}

/// A name is safe when it is one plain file name: 1 to 128 bytes of `[A-Za-z0-9._-]`, not
/// starting with a dot. No separator, no `..`, no NUL, no percent sign: nothing that could
/// leave the folder, however the router decoded it.
pub(crate) fn safe_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Whether a request path percent-decodes to a NUL byte anywhere: the hostile path several
/// frameworks' static-file facilities answer with a 500 or a redirect, which their guards refuse
/// first (a percent escape cannot span a `/`, so segments need no splitting).
pub(crate) fn decodes_to_nul(path: &str) -> bool {
    percent_encoding::percent_decode_str(path).any(|b| b == 0)
}

/// The content type our own static handlers send for `name` (frameworks' own facilities use
/// their own tables).
pub(crate) fn content_type_for(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html",
        Some("css") => "text/css",
        Some("js") => "text/javascript",
        Some("txt") => "text/plain",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file under `dir`, as paths relative to it with `/`.
    fn files(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        for e in fs::read_dir(dir).unwrap().flatten() {
            let name = format!("{prefix}{}", e.file_name().to_string_lossy());
            if e.file_type().unwrap().is_dir() {
                files(&e.path(), &format!("{name}/"), out);
            } else {
                out.push(name);
            }
        }
    }

    #[test]
    fn the_embedded_fixtures_are_the_folder_byte_for_byte_and_unpack_to_a_loadable_copy() {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut on_disk = Vec::new();
        files(&source, "", &mut on_disk);
        on_disk.sort();
        let mut embedded: Vec<String> = EMBEDDED.iter().map(|(n, _)| (*n).to_owned()).collect();
        embedded.sort();
        assert_eq!(
            embedded, on_disk,
            "fixtures/ and EMBEDDED list different files"
        );
        for (name, bytes) in EMBEDDED {
            assert_eq!(&fs::read(source.join(name)).unwrap(), bytes, "{name}");
        }
        let parent = std::env::temp_dir().join(format!("framebench-unpack-{}", std::process::id()));
        fs::create_dir_all(&parent).unwrap();
        let dir = unpack_embedded(&parent).unwrap();
        // A second call finds it.
        assert_eq!(unpack_embedded(&parent).unwrap(), dir);
        let copy = Fixtures::load(&dir).unwrap();
        let original = Fixtures::load(&source).unwrap();
        assert_eq!(copy.static_mem, original.static_mem);
        assert_eq!(copy.paste_mem, original.paste_mem);
        fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn safe_names() {
        for ok in ["mysrc", "webupload.html", "a-b_c.d"] {
            assert!(safe_name(ok), "{ok}");
        }
        for bad in [
            "", ".", "..", ".hidden", "../x", "a/b", "a\\b", "a\0b", "%2e%2e", "a b", "é",
        ] {
            assert!(!safe_name(bad), "{bad:?}");
        }
        assert!(!safe_name(&"x".repeat(129)));
    }
}
