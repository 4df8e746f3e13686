//! Response shaping shared by every tool: what a call answers ([`ToolOutcome`]), the per-response
//! caps of T4 (`docs/mcp-budgets.md`: 20 items, 4,000 characters of structuredContent JSON, then `truncated: true`
//! and an opaque `next` cursor), and `ferry://<project>/<kind>/<id>` links ([`ResourceUri`],
//! [`ResourceLink`]) for bodies that are fetched on demand instead of inlined (T7).
//!
//! Keeping this in one place is what lets a budget test speak for every tool at once.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// At most this many items in one response list (T4).
pub const MAX_ITEMS: usize = 20;
/// At most this many characters in the JSON of one response's structuredContent (T4).
pub const MAX_STRUCTURED_CHARS: usize = 4_000;
/// The longest component of a `ferry://` URI.
pub const MAX_URI_COMPONENT: usize = 128;

/// What a tool call produced, before the protocol turns it into a `tools/call` result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// The `structuredContent`; must validate against the tool's outputSchema when not an error.
    pub structured: Option<Value>,
    /// The one-line text block beside it (what content-only clients show).
    pub summary: String,
    pub is_error: bool,
    /// `resource_link` content blocks after the summary.
    pub links: Vec<ResourceLink>,
    /// Text blocks after the summary, kept as written (several lines allowed): what a gateway
    /// relays of an external server's answer.
    pub texts: Vec<String>,
    /// The result's `_meta` (an object), when the tool has something to say about the result
    /// itself (a gateway marks third-party data there). Boxed: every tool's error path returns
    /// an outcome by value, and it stays small.
    pub meta: Option<Box<Value>>,
}

impl ToolOutcome {
    /// A successful result: structured content plus a one-line summary (newlines become spaces).
    pub fn ok(structured: Value, summary: impl Into<String>) -> Self {
        Self {
            structured: Some(structured),
            summary: one_line(summary.into()),
            is_error: false,
            links: Vec::new(),
            texts: Vec::new(),
            meta: None,
        }
    }

    /// A successful result with only a text line (for tools without an outputSchema).
    pub fn text(summary: impl Into<String>) -> Self {
        Self {
            structured: None,
            summary: one_line(summary.into()),
            is_error: false,
            links: Vec::new(),
            texts: Vec::new(),
            meta: None,
        }
    }

    /// A tool error (`isError: true`): a clear text that lets the model correct itself.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            structured: None,
            summary: one_line(text.into()),
            is_error: true,
            links: Vec::new(),
            texts: Vec::new(),
            meta: None,
        }
    }

    /// Adds a text block after the summary, kept as written.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.texts.push(text.into());
        self
    }

    /// Sets the result's `_meta` object.
    pub fn with_meta(mut self, meta: Value) -> Self {
        self.meta = Some(Box::new(meta));
        self
    }

    /// Adds a `resource_link` content block.
    pub fn with_link(mut self, link: ResourceLink) -> Self {
        self.links.push(link);
        self
    }
}

fn one_line(text: String) -> String {
    if text.contains(['\n', '\r']) {
        text.replace(['\n', '\r'], " ")
    } else {
        text
    }
}

/// A `resource_link` content block pointing at a `ferry://` resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceLink {
    pub uri: ResourceUri,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<&'static str>,
    /// Size of the body in bytes, when known.
    pub size: Option<u64>,
}

impl ResourceLink {
    pub fn new(uri: ResourceUri, name: impl Into<String>) -> Self {
        Self {
            uri,
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        }
    }
    pub fn mime_type(mut self, mime_type: &'static str) -> Self {
        self.mime_type = Some(mime_type);
        self
    }
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
    pub fn size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    /// The MCP content block `{type:"resource_link", uri, name, ...}`.
    pub fn to_content(&self) -> Value {
        let mut block = serde_json::Map::new();
        block.insert("type".into(), "resource_link".into());
        block.insert("uri".into(), self.uri.to_string().into());
        block.insert("name".into(), self.name.clone().into());
        if let Some(title) = &self.title {
            block.insert("title".into(), title.clone().into());
        }
        if let Some(description) = &self.description {
            block.insert("description".into(), description.clone().into());
        }
        if let Some(mime_type) = self.mime_type {
            block.insert("mimeType".into(), mime_type.into());
        }
        if let Some(size) = self.size {
            block.insert("size".into(), size.into());
        }
        Value::Object(block)
    }
}

/// Why a `ferry://` URI was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UriError {
    #[error("not a ferry:// uri")]
    NotFerry,
    #[error("expected ferry://<project>/<kind>/<id>")]
    WrongShape,
    #[error("empty or too long component")]
    BadLength,
    #[error("component has a character outside [A-Za-z0-9_.-]")]
    BadCharacter,
}

/// `ferry://<project>/<kind>/<id>`: each component 1-128 characters of `[A-Za-z0-9_.-]`, never
/// `.` or `..`, so a component can name a file without escaping its folder.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResourceUri {
    project: String,
    kind: String,
    id: String,
}

impl ResourceUri {
    pub const SCHEME: &'static str = "ferry://";

    pub fn new(project: &str, kind: &str, id: &str) -> Result<Self, UriError> {
        for component in [project, kind, id] {
            check_component(component)?;
        }
        Ok(Self {
            project: project.to_owned(),
            kind: kind.to_owned(),
            id: id.to_owned(),
        })
    }

    pub fn parse(text: &str) -> Result<Self, UriError> {
        let rest = text.strip_prefix(Self::SCHEME).ok_or(UriError::NotFerry)?;
        let mut parts = rest.split('/');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(project), Some(kind), Some(id), None) => Self::new(project, kind, id),
            _ => Err(UriError::WrongShape),
        }
    }

    pub fn project(&self) -> &str {
        &self.project
    }
    pub fn kind(&self) -> &str {
        &self.kind
    }
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl fmt::Display for ResourceUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}/{}/{}",
            Self::SCHEME,
            self.project,
            self.kind,
            self.id
        )
    }
}

fn check_component(component: &str) -> Result<(), UriError> {
    if component.is_empty() || component.len() > MAX_URI_COMPONENT {
        return Err(UriError::BadLength);
    }
    if component == "." || component == ".." {
        return Err(UriError::BadCharacter);
    }
    if component
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    {
        Ok(())
    } else {
        Err(UriError::BadCharacter)
    }
}

/// An opaque cursor naming a position in a list: `nextCursor` of `tools/list` and the `next`
/// of a truncated tool response, written `p<hex>`. Clients must treat it as opaque; we only
/// promise that a cursor we issued decodes again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor(pub usize);

/// Why a page cursor was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    /// Not a cursor that we issued.
    #[error("invalid cursor")]
    Invalid,
}

impl Cursor {
    const PREFIX: &'static str = "p";

    pub fn encode(self) -> String {
        format!("{}{:x}", Self::PREFIX, self.0)
    }

    pub fn decode(text: &str) -> Result<Self, CursorError> {
        let digits = text
            .strip_prefix(Self::PREFIX)
            .ok_or(CursorError::Invalid)?;
        if digits.is_empty()
            || digits.len() > 12
            || !digits
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(CursorError::Invalid);
        }
        usize::from_str_radix(digits, 16)
            .map(Cursor)
            .map_err(|_| CursorError::Invalid)
    }
}

/// One capped page of a list: at most [`MAX_ITEMS`] items whose JSON fits the character budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// True when items were left out; `next` then resumes after the last item given.
    pub truncated: bool,
    pub next: Option<String>,
}

/// Why a page could not be cut.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    #[error(transparent)]
    Cursor(#[from] CursorError),
    #[error("cursor past the end of the list")]
    PastEnd,
    #[error("item is not serialisable: {0}")]
    Serialise(String),
}

/// Cuts the page of `all` that starts at `cursor` (the start when `None`) so that the response
/// stays within T4: at most [`MAX_ITEMS`] items, and item JSON (plus separators) of at most
/// [`MAX_STRUCTURED_CHARS`] minus `reserve_chars`, the characters the rest of the structured
/// response takes (its other fields, plus `"truncated":true,"next":"..."`). At least one item is
/// given when any remain, so a client always makes progress.
pub fn paginate<T: Serialize>(
    all: Vec<T>,
    cursor: Option<&str>,
    reserve_chars: usize,
) -> Result<Page<T>, PageError> {
    let start = match cursor {
        None => 0,
        Some(text) => Cursor::decode(text)?.0,
    };
    if start > all.len() {
        return Err(PageError::PastEnd);
    }
    let budget = MAX_STRUCTURED_CHARS.saturating_sub(reserve_chars);
    let mut used = 0usize;
    let mut take = 0usize;
    for item in all.iter().skip(start).take(MAX_ITEMS) {
        let chars = serde_json::to_string(item)
            .map_err(|e| PageError::Serialise(e.to_string()))?
            .chars()
            .count();
        let with_separator = chars + usize::from(take > 0);
        if take > 0 && used + with_separator > budget {
            break;
        }
        used += with_separator;
        take += 1;
    }
    let end = start + take;
    let truncated = end < all.len();
    let next = truncated.then(|| Cursor(end).encode());
    let items = all.into_iter().skip(start).take(take).collect();
    Ok(Page {
        items,
        truncated,
        next,
    })
}

/// Characters that `"truncated":true,"next":"<cursor>"` adds to a response, for `reserve_chars`.
pub const TRUNCATION_FIELDS_CHARS: usize = 48;

/// Why a structured response breaks the T4 caps.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapError {
    #[error("structuredContent is {0} characters, over {MAX_STRUCTURED_CHARS}")]
    TooLong(usize),
    #[error("list `{field}` has {len} items, over {MAX_ITEMS}")]
    TooManyItems { field: String, len: usize },
}

/// Checks a structuredContent value against the T4 caps (every array, at any depth, counts).
pub fn check_caps(structured: &Value) -> Result<(), CapError> {
    let chars = structured.to_string().chars().count();
    if chars > MAX_STRUCTURED_CHARS {
        return Err(CapError::TooLong(chars));
    }
    check_arrays("", structured)
}

fn check_arrays(field: &str, value: &Value) -> Result<(), CapError> {
    match value {
        Value::Array(items) if items.len() > MAX_ITEMS => Err(CapError::TooManyItems {
            field: field.to_owned(),
            len: items.len(),
        }),
        Value::Array(items) => items.iter().try_for_each(|item| check_arrays(field, item)),
        Value::Object(map) => map
            .iter()
            .try_for_each(|(key, item)| check_arrays(key, item)),
        _ => Ok(()),
    }
}
