//! The safety switch in front of every tool: each tool belongs to one
//! [`ToolClass`], and a call runs only when the configuration enables that
//! class. Reads are on by default; create, update and delete are off.
//!
//! The class of a tool is what it does to the server, not what its name
//! says: sending messages creates data, storing a consumer offset updates
//! state, purging deletes data. A poll that would commit the consumer
//! offset is an update too (see `tools::messages`).

use crate::config::PermissionsConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolClass {
    Read,
    Create,
    Update,
    Delete,
}

impl ToolClass {
    pub fn name(self) -> &'static str {
        match self {
            ToolClass::Read => "read",
            ToolClass::Create => "create",
            ToolClass::Update => "update",
            ToolClass::Delete => "delete",
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Permissions {
    config: PermissionsConfig,
}

impl Permissions {
    pub fn new(config: PermissionsConfig) -> Self {
        Self { config }
    }

    pub fn allows(&self, class: ToolClass) -> bool {
        match class {
            ToolClass::Read => self.config.read,
            ToolClass::Create => self.config.create,
            ToolClass::Update => self.config.update,
            ToolClass::Delete => self.config.delete,
        }
    }

    /// `Ok` when `class` is enabled, else the message an agent sees: what is
    /// refused and which switch an operator would turn on.
    pub fn check(&self, tool: &str, class: ToolClass) -> Result<(), String> {
        if self.allows(class) {
            return Ok(());
        }
        let name = class.name();
        Err(format!(
            "tool {tool} is refused: '{name}' operations are disabled in this iggy-mcp \
             (set permissions.{name} = true or IGGY_MCP_PERMISSIONS_{}=true to allow them)",
            name.to_ascii_uppercase()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_default_permissions_when_checking_should_allow_reads_only() {
        let permissions = Permissions::new(PermissionsConfig::default());
        assert!(permissions.check("get_streams", ToolClass::Read).is_ok());
        for class in [ToolClass::Create, ToolClass::Update, ToolClass::Delete] {
            let refusal = permissions.check("x", class).err();
            assert!(
                refusal.is_some_and(|message| message.contains(class.name())),
                "{class:?} must be refused by default"
            );
        }
    }

    #[test]
    fn given_only_delete_enabled_when_checking_should_allow_delete_alone() {
        let permissions = Permissions::new(PermissionsConfig {
            read: false,
            create: false,
            update: false,
            delete: true,
        });
        assert!(permissions.allows(ToolClass::Delete));
        assert!(!permissions.allows(ToolClass::Read));
        assert!(!permissions.allows(ToolClass::Create));
        assert!(!permissions.allows(ToolClass::Update));
    }
}
