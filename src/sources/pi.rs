//! Reader of pi session files (see ForeignReader).
