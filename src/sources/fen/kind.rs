//! fen as a kind: its own store is writable and read through `store` and `views`,
//! not walked as another agent's; what the kind gives is how its messages read, its
//! name in messages and its colour.

use crate::agent::Agent;
use crate::sources::foreign::ForeignReader;
use crate::sources::kind::AgentKind;
use crate::sources::pi::PiReader;

pub struct Fen;

impl AgentKind for Fen {
    fn agent(&self) -> Agent {
        Agent::Fen
    }

    fn colour(&self) -> (u8, u8, u8) {
        (0x2c, 0x3e, 0x50)
    }

    /// fen's files are not read by a reader; pi's, whose message shapes fen keeps.
    fn reader_for(&self, _file_name: &str) -> Box<dyn ForeignReader> {
        Box::new(PiReader::new())
    }

    fn to_neutral(&self, message: &serde_json::Value) -> Option<crate::neutral::Message> {
        super::neutral::to_neutral(message)
    }
}
