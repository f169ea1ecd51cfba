//! The names of the `usage/` folder's files and the report each shows: what the
//! inode table numbers and the folder's handlers (usage.rs) render, apart from both.

use crate::usage::report::Kind;

/// The files of `usage/`, in `ls` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UsageFile {
    ByAgent,
    ByModel,
    ByProject,
    Daily,
    DailySvg,
    Monthly,
}

impl UsageFile {
    pub const ALL: [UsageFile; 6] = [
        UsageFile::ByAgent,
        UsageFile::ByModel,
        UsageFile::ByProject,
        UsageFile::Daily,
        UsageFile::DailySvg,
        UsageFile::Monthly,
    ];

    pub fn name(self) -> &'static str {
        match self {
            UsageFile::ByAgent => "by-agent.json",
            UsageFile::ByModel => "by-model.json",
            UsageFile::ByProject => "by-project.json",
            UsageFile::Daily => "daily.json",
            UsageFile::DailySvg => "daily.svg",
            UsageFile::Monthly => "monthly.json",
        }
    }

    pub fn code(self) -> u64 {
        UsageFile::ALL.iter().position(|f| *f == self).unwrap_or(0) as u64
    }

    pub fn of_code(code: u64) -> Option<UsageFile> {
        UsageFile::ALL.get(code as usize).copied()
    }

    pub(super) fn report(self) -> Option<Kind> {
        Some(match self {
            UsageFile::ByAgent => Kind::Agent,
            UsageFile::ByModel => Kind::Model,
            UsageFile::ByProject => Kind::Project,
            UsageFile::Daily => Kind::Daily,
            UsageFile::Monthly => Kind::Monthly,
            UsageFile::DailySvg => return None,
        })
    }
}
