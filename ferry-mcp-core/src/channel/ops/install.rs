//! Putting a release artifact in place of a binary, and back (ADR 0020): download beside it,
//! check the SHA-256 against the pin, keep the previous binary, rename. And the two transports
//! an artifact is fetched with: plain `http://` by a minimal GET of our own, and `https://` by
//! the system's `curl`, run as a child with strict flags (ADR 0020 says why not a TLS crate).
//!
//! Why its own module: this is the only code that changes files outside the channel and the
//! state folder, so what a crash may leave behind is decided here, once. Nothing here knows the
//! channel: the operation (`ops::releases::apply`) judges what may be installed and hands over
//! the bytes and the pin.

use std::fs;
use std::io::{self, BufRead as _, BufReader, Read, Write as _};
use std::net::{TcpStream, ToSocketAddrs as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use sha2::{Digest as _, Sha256 as Hasher};

use crate::channel::fold::state::releases::Sha256;

/// The largest artifact taken (a `ferry` binary is a few tens of MiB).
pub const MAX_ARTIFACT: u64 = 256 << 20;

/// How long a fetch waits to connect and for each read.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest an `https://` fetch may take in all (a stalled one ends sooner: it must move at
/// least a byte every [`HTTP_TIMEOUT`]).
pub const HTTPS_MAX_TIME: Duration = Duration::from_secs(15 * 60);

/// The most bytes of a response's status line and headers.
const MAX_HEAD: usize = 64 * 1024;

/// How many redirects an `https://` fetch follows (each to `https://` only).
const MAX_REDIRECTS: u32 = 5;

/// The most bytes of `curl`'s own messages read.
const MAX_CURL_STDERR: u64 = 16 * 1024;

/// The environment `curl` is given: the proxy settings and nothing else (no `HOME`, so no
/// `.curlrc`, which `-q` refuses anyway; no `CURL_CA_BUNDLE` or `SSL_CERT_FILE` to swap the
/// roots it verifies with; no `SSLKEYLOGFILE`).
const CURL_ENV: &[&str] = &[
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
];

/// How an `https://` artifact is fetched: by the system's `curl` (ADR 0020), which verifies the
/// server against the system's roots. The default is what every command and server uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Https {
    /// The `curl` to run; by default the first `curl` on `PATH`.
    pub curl: Option<PathBuf>,
    /// A PEM file of the only roots to trust instead of the system's CA bundle. Tests set it,
    /// to trust the certificate their loopback server made at test time; no command, flag or
    /// environment variable of `ferry` sets it. Verification is never turned off.
    pub test_roots: Option<PathBuf>,
}

/// Why installing (or fetching) failed. One variant per cause.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("this process knows no binary to replace")]
    NoBinary,
    #[error("{path}: {cause}")]
    Io { path: PathBuf, cause: io::Error },
    #[error(
        "the download's SHA-256 is {found}, the approval pins {pinned}: refused, the download was removed and nothing was installed"
    )]
    Mismatch { found: Sha256, pinned: Sha256 },
    #[error("the artifact is larger than {MAX_ARTIFACT} bytes")]
    TooLarge,
    #[error(
        "https is fetched with the system's curl, and there is no curl on PATH: install curl, or the master can approve a channel blob, a file or an http mirror"
    )]
    NoCurl,
    #[error("{0:?} is not an http or https URL")]
    BadUrl(String),
    #[error("fetching {url}: {why}")]
    Fetch { url: String, why: String },
    #[error("fetching {url}: a redirect led to a URL that is not https: refused ({curl})")]
    RedirectOffHttps { url: String, curl: String },
    #[error("fetching {url}: the server's certificate is not trusted: refused ({curl})")]
    Untrusted { url: String, curl: String },
    #[error("there is no previous binary beside {0}")]
    NoPrevious(PathBuf),
}

impl InstallError {
    fn io(path: &Path) -> impl FnOnce(io::Error) -> InstallError + '_ {
        move |cause| InstallError::Io {
            path: path.to_owned(),
            cause,
        }
    }
}

/// The temporary file an apply downloads to, beside `binary` (hidden, one per binary).
pub fn temp_path(binary: &Path) -> PathBuf {
    sibling(binary, |name| format!(".{name}.update"))
}

/// Where the replaced binary is kept, for a rollback.
pub fn previous_path(binary: &Path) -> PathBuf {
    sibling(binary, |name| format!("{name}.previous"))
}

fn sibling(binary: &Path, name: impl FnOnce(&str) -> String) -> PathBuf {
    let file = binary
        .file_name()
        .map_or_else(|| "ferry".into(), |name| name.to_string_lossy());
    binary.with_file_name(name(&file))
}

/// What an install did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The SHA-256 of the file now at the binary's path (the pin).
    pub sha256: Sha256,
    /// Where the binary it replaced is kept (none when there was none).
    pub previous: Option<PathBuf>,
    /// A temporary file an earlier, interrupted apply left was removed first.
    pub removed_leftover: bool,
}

/// Installs the bytes of `source` at `binary`, if they hash to `pin`. See the module docs and
/// ADR 0020 for the steps and what a crash leaves: the old binary whole and, before the
/// rename, a temporary file the next install removes.
pub fn install(
    binary: &Path,
    source: &mut dyn Read,
    pin: Sha256,
) -> Result<Installed, InstallError> {
    let temp = temp_path(binary);
    let removed_leftover = remove_if_there(&temp)?;
    let found = download(source, &temp).inspect_err(|_| {
        let _ = fs::remove_file(&temp);
    })?;
    if found != pin {
        fs::remove_file(&temp).map_err(InstallError::io(&temp))?;
        return Err(InstallError::Mismatch { found, pinned: pin });
    }
    let previous = match fs::symlink_metadata(binary) {
        Ok(meta) => {
            fs::set_permissions(&temp, meta.permissions()).map_err(InstallError::io(&temp))?;
            let previous = previous_path(binary);
            remove_if_there(&previous)?;
            // A link costs nothing; a file system without them gets a copy, synced.
            if fs::hard_link(binary, &previous).is_err() {
                fs::copy(binary, &previous).map_err(InstallError::io(&previous))?;
                sync_file(&previous)?;
            }
            Some(previous)
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(InstallError::io(binary)(err)),
    };
    fs::rename(&temp, binary).map_err(InstallError::io(binary))?;
    sync_dir(binary)?;
    Ok(Installed {
        sha256: found,
        previous,
        removed_leftover,
    })
}

/// Puts the previous binary back at `binary` (one rename).
pub fn rollback(binary: &Path) -> Result<PathBuf, InstallError> {
    let previous = previous_path(binary);
    match fs::symlink_metadata(&previous) {
        Ok(meta) if meta.file_type().is_file() => {}
        _ => return Err(InstallError::NoPrevious(binary.to_owned())),
    }
    fs::rename(&previous, binary).map_err(InstallError::io(binary))?;
    sync_dir(binary)?;
    Ok(previous)
}

/// Whether an interrupted apply left its temporary file beside `binary`.
pub fn leftover(binary: &Path) -> bool {
    fs::symlink_metadata(temp_path(binary)).is_ok()
}

/// Copies `source` to a new file at `temp`, hashing as it goes; synced before it returns.
fn download(source: &mut dyn Read, temp: &Path) -> Result<Sha256, InstallError> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o700);
    }
    let mut file = options.open(temp).map_err(InstallError::io(temp))?;
    let mut hasher = Hasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let read = match source.read(&mut buf) {
            Ok(0) => break,
            Ok(read) => read,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(read_failed(err)),
        };
        total += read as u64;
        if total > MAX_ARTIFACT {
            return Err(InstallError::TooLarge);
        }
        hasher.update(&buf[..read]);
        file.write_all(&buf[..read])
            .map_err(InstallError::io(temp))?;
    }
    file.sync_all().map_err(InstallError::io(temp))?;
    Ok(Sha256(hasher.finalize().into()))
}

/// The SHA-256 of everything `source` gives (at most [`MAX_ARTIFACT`] bytes).
pub fn hash(source: &mut dyn Read) -> Result<Sha256, InstallError> {
    let mut hasher = Hasher::new();
    let mut limited = source.take(MAX_ARTIFACT + 1);
    let copied = io::copy(&mut limited, &mut HashWriter(&mut hasher)).map_err(read_failed)?;
    if copied > MAX_ARTIFACT {
        return Err(InstallError::TooLarge);
    }
    Ok(Sha256(hasher.finalize().into()))
}

/// A failed read of an artifact: the fetch's own error when the source is a fetch (an `https`
/// download says why `curl` failed when its output ends), else the read's.
fn read_failed(err: io::Error) -> InstallError {
    match err.downcast::<InstallError>() {
        Ok(err) => err,
        Err(err) => InstallError::Fetch {
            url: "the artifact".into(),
            why: err.to_string(),
        },
    }
}

struct HashWriter<'a>(&'a mut Hasher);

impl io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn remove_if_there(path: &Path) -> Result<bool, InstallError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(InstallError::io(path)(err)),
    }
}

fn sync_file(path: &Path) -> Result<(), InstallError> {
    fs::File::open(path)
        .and_then(|file| file.sync_all())
        .map_err(InstallError::io(path))
}

/// Syncs the folder holding `binary`, so the rename is on disk before the answer says so.
fn sync_dir(binary: &Path) -> Result<(), InstallError> {
    let dir = match binary.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    fs::File::open(dir)
        .and_then(|dir| dir.sync_all())
        .map_err(InstallError::io(dir))
}

/// Fetches an artifact's `url`: `https://` with [`https_get`], `http://` with [`http_get`].
/// The pin, not the transport, is what makes the bytes trusted: whatever arrives is hashed
/// against it before anything is installed.
pub fn fetch(url: &str, https: &Https) -> Result<Box<dyn Read>, InstallError> {
    if url.starts_with("https://") {
        https_get(url, https)
    } else {
        http_get(url, HTTP_TIMEOUT)
    }
}

/// Fetches `url` (`http://host[:port]/path`) with one HTTP/1.1 GET: the body of a `200`, read
/// up to its `Content-Length` or the connection's end. No redirect is followed, no chunked body
/// is read.
pub fn http_get(url: &str, timeout: Duration) -> Result<Box<dyn Read>, InstallError> {
    let fetch = |why: String| InstallError::Fetch {
        url: url.to_owned(),
        why,
    };
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| InstallError::BadUrl(url.to_owned()))?;
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    if authority.is_empty()
        || authority.contains('@')
        || path.bytes().any(|b| b.is_ascii_control() || b == b' ')
    {
        return Err(InstallError::BadUrl(url.to_owned()));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || host.starts_with('[') => (
            host,
            port.parse::<u16>()
                .map_err(|_| InstallError::BadUrl(url.to_owned()))?,
        ),
        _ => (authority, 80),
    };
    let host_bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs = (host_bare, port)
        .to_socket_addrs()
        .map_err(|err| fetch(err.to_string()))?;
    let mut last = None;
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(connected) => {
                stream = Some(connected);
                break;
            }
            Err(err) => last = Some(err),
        }
    }
    let mut stream = stream.ok_or_else(|| {
        fetch(last.map_or_else(|| "no address".to_owned(), |err| err.to_string()))
    })?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|err| fetch(err.to_string()))?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: ferry/{}\r\nAccept: */*\r\nConnection: close\r\n\r\n",
        env!("CARGO_PKG_VERSION")
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|err| fetch(err.to_string()))?;
    let mut reader = BufReader::new(stream);
    let mut head = 0usize;
    let mut line = String::new();
    let mut read_line = |reader: &mut BufReader<TcpStream>, line: &mut String| {
        line.clear();
        let read = reader
            .by_ref()
            .take((MAX_HEAD - head) as u64)
            .read_line(line)
            .map_err(|err| fetch(err.to_string()))?;
        head += read;
        if read == 0 || !line.ends_with('\n') {
            return Err(fetch("the response's head is cut or too long".into()));
        }
        Ok(())
    };
    read_line(&mut reader, &mut line)?;
    let status = line.split_whitespace().nth(1).unwrap_or("").to_owned();
    if status != "200" {
        return Err(fetch(format!(
            "the server answered {}",
            line.trim_end().chars().take(80).collect::<String>()
        )));
    }
    let mut length = None;
    loop {
        read_line(&mut reader, &mut line)?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<u64>()
                    .map_err(|_| fetch("a bad Content-Length".into()))?,
            );
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            && !value.eq_ignore_ascii_case("identity")
        {
            return Err(fetch(format!("a {value} body is not read")));
        }
    }
    match length {
        Some(length) if length > MAX_ARTIFACT => Err(InstallError::TooLarge),
        Some(length) => Ok(Box::new(reader.take(length))),
        None => Ok(Box::new(reader)),
    }
}

/// Fetches `url` (`https://...`) with the system's `curl`, streaming its output: only https, for
/// the URL and for every redirect (at most [`MAX_REDIRECTS`]); TLS 1.2 at least, the server
/// verified against the system's roots (or [`Https::test_roots`]); no config file and none of
/// the caller's environment but its proxies; an HTTP error status fails; the size capped at
/// [`MAX_ARTIFACT`]; [`HTTP_TIMEOUT`] to connect and for any stall, [`HTTPS_MAX_TIME`] in all.
/// `curl`'s verdict arrives when its output ends: a failure is the read's error then, so a
/// download that was cut is never taken for a whole one.
pub fn https_get(url: &str, https: &Https) -> Result<Box<dyn Read>, InstallError> {
    let Some(rest) = url.strip_prefix("https://") else {
        return Err(InstallError::BadUrl(url.to_owned()));
    };
    if rest.is_empty() || url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(InstallError::BadUrl(url.to_owned()));
    }
    let curl = match &https.curl {
        Some(curl) => curl.clone(),
        None => find_on_path(&format!("curl{}", std::env::consts::EXE_SUFFIX))
            .ok_or(InstallError::NoCurl)?,
    };
    let secs = |duration: Duration| duration.as_secs().to_string();
    let mut command = Command::new(&curl);
    // `-q` first: no `.curlrc` is read.
    command.args(["-q", "--silent", "--show-error", "--fail", "--location"]);
    command.args(["--proto", "=https", "--proto-redir", "=https"]);
    command.args(["--max-redirs", &MAX_REDIRECTS.to_string(), "--tlsv1.2"]);
    command.args(["--connect-timeout", &secs(HTTP_TIMEOUT)]);
    command.args(["--speed-limit", "1", "--speed-time", &secs(HTTP_TIMEOUT)]);
    command.args(["--max-time", &secs(HTTPS_MAX_TIME)]);
    command.args(["--max-filesize", &MAX_ARTIFACT.to_string()]);
    command.args(["--globoff", "--output", "-"]);
    command.arg("--user-agent");
    command.arg(concat!("ferry/", env!("CARGO_PKG_VERSION")));
    if let Some(roots) = &https.test_roots {
        command.arg("--cacert").arg(roots);
    }
    command.arg("--url").arg(url);
    command.env_clear();
    for name in CURL_ENV {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|err| match err.kind() {
        io::ErrorKind::NotFound => InstallError::NoCurl,
        _ => InstallError::Fetch {
            url: url.to_owned(),
            why: format!("running {}: {err}", curl.display()),
        },
    })?;
    let stdout = child.stdout.take().expect("curl's stdout is piped");
    let stderr = child.stderr.take().expect("curl's stderr is piped");
    // Drained on a thread of its own: curl never blocks on a full stderr pipe while we read
    // its stdout.
    let stderr = std::thread::spawn(move || {
        let mut said = Vec::new();
        let mut stderr = stderr;
        let _ = stderr.by_ref().take(MAX_CURL_STDERR).read_to_end(&mut said);
        let _ = io::copy(&mut stderr, &mut io::sink());
        said
    });
    Ok(Box::new(CurlDownload {
        url: url.to_owned(),
        child,
        stdout,
        stderr: Some(stderr),
        ended: false,
    }))
}

/// The first executable file named `name` in a folder of `PATH`.
fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// `curl`'s output, read as it arrives; its exit status is judged when the output ends.
struct CurlDownload {
    url: String,
    child: Child,
    stdout: ChildStdout,
    stderr: Option<JoinHandle<Vec<u8>>>,
    ended: bool,
}

impl CurlDownload {
    /// What curl's exit says: nothing when it succeeded.
    fn verdict(&mut self) -> Result<(), InstallError> {
        let status = self.child.wait().map_err(|err| InstallError::Fetch {
            url: self.url.clone(),
            why: format!("waiting for curl: {err}"),
        })?;
        let said = self
            .stderr
            .take()
            .and_then(|thread| thread.join().ok())
            .unwrap_or_default();
        if status.success() {
            return Ok(());
        }
        let curl = curl_said(&said).unwrap_or_else(|| format!("curl ended with {status}"));
        let url = self.url.clone();
        // curl's exit codes (`man curl`, "EXIT CODES").
        Err(match status.code() {
            Some(1) => InstallError::RedirectOffHttps { url, curl },
            Some(60) => InstallError::Untrusted { url, curl },
            Some(63) => InstallError::TooLarge,
            _ => InstallError::Fetch { url, why: curl },
        })
    }
}

/// curl's last message line (`curl: (N) ...`), printable and at most 200 characters.
fn curl_said(stderr: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stderr);
    let line = text
        .lines()
        .rev()
        .find(|line| line.starts_with("curl: ("))
        .or_else(|| text.lines().rev().find(|line| !line.trim().is_empty()))?;
    Some(
        line.trim()
            .chars()
            .filter(|c| !c.is_control())
            .take(200)
            .collect(),
    )
}

impl Read for CurlDownload {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.stdout.read(buf)?;
        if read == 0 && !buf.is_empty() && !self.ended {
            self.ended = true;
            self.verdict().map_err(io::Error::other)?;
        }
        Ok(read)
    }
}

impl Drop for CurlDownload {
    /// A download given up before its end (too large, a failed write) stops curl.
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
