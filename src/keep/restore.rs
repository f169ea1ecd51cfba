//! `fen-fs restore` of a kept session whose source is gone.
