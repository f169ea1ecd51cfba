//! Reader of claude session files (see ForeignReader).
