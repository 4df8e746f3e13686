//! The tool registry: groups of static tools, assembled into a surface. (Filled in by the
//! protocol work; this is the contract other crates code against.)

use crate::tool::Tool;

/// A named group of tools (`core`, `admin`, `legacy`, or one a downstream crate adds).
#[derive(Clone, Copy)]
pub struct Group {
    pub name: &'static str,
    /// Sorted by tool name, no duplicates (checked by [`Registry::new`] and by tests).
    pub tools: &'static [&'static dyn Tool],
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group").field("name", &self.name).field("tools", &self.tools.len()).finish()
    }
}

/// The tools one server serves, sorted by name.
#[derive(Debug, Default)]
pub struct Surface {
    tools: Vec<&'static dyn Tool>,
}

impl std::fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.definition().name)
    }
}

impl Surface {
    pub fn tools(&self) -> &[&'static dyn Tool] {
        &self.tools
    }
}
