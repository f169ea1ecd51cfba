//! Roo Code (the VS Code extension `rooveterinaryinc.roo-cline`, a fork of Cline):
//! Cline's task folders under its own names (`tasks/<id>/history_item.json` beside
//! `api_conversation_history.json` and `ui_messages.json`, no index of tasks), read
//! by Cline's units, reader, conversion and usage (`sources/cline/`) over [`ROO`].
//! Its resume rules differ from Cline's: `getEffectiveApiHistory` (its condensing and
//! truncation keep every message and tag those left out), which Cline's reader
//! applies to a task that has a `history_item.json`. A subtask names its parent
//! (`parentTaskId`): a session of its own, `parent_id` in meta.json.
//!
//! Built from Roo Code's source only (RooCodeInc/Roo-Code cb836567:
//! `src/core/task-persistence/`, `src/core/condense/index.ts`,
//! `packages/types/src/history.ts`); no Roo Code was run.

pub mod kind;

use super::cline::Names;

/// Roo Code's names for Cline's task folders.
pub const ROO: Names = Names {
    name: "roo",
    display: "Roo Code",
    task_record: "history_item.json",
    history_index: None,
    sessions: false,
};

/// Its folder in VS Code's global storage (the publisher and name VS Code folds to
/// lower case).
pub const STORAGE: &str = "rooveterinaryinc.roo-cline";
