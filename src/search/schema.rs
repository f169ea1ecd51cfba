//! What the search index holds: its Tantivy schema, the analyzer that cuts text into
//! words, and the stamp a saved index must carry to be used.
//!
//! Two kinds of documents:
//! - one per message: its text (stored, for snippets), and for filtering and grouping
//!   its session (`sid`), source (`src`), agent, cwd and time (`ts`); `info` holds what
//!   a hit shows (role, entry, timestamp, in_conversation);
//! - one per session (`session_of` = its `sid`): its title as text, and in `info` its
//!   facts and what was indexed of it (the stamp it was read at, how many messages),
//!   with `size`, `mtime`, `count` and `prefix` also as fast fields, so the freshness
//!   check reads columns, not stored documents.

use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer,
};

/// The analyzer's name in the index.
pub const TOKENIZER: &str = "fen_words";

/// Words longer than this (in bytes) are not indexed: base64, minified code.
pub const MAX_WORD_BYTES: usize = 48;

/// Bumped whenever what is indexed or how changes: an index with another version is
/// rebuilt.
pub const FORMAT_VERSION: u32 = 2;

/// The fast fields of a session document's mark.
pub const MARK_FIELDS: [&str; 4] = ["mark0", "mark1", "mark2", "mark3"];

/// Words: runs of letters and digits (Unicode), lower-cased and folded to ASCII where
/// a folding exists (`Café` → `cafe`). No stemming, no stop words.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(MAX_WORD_BYTES + 1))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

/// `analyzer`, adding the bytes of every text it cuts to `taken`: the index's own
/// thread cuts each document's text as it takes it, so this is how far it got
/// through what was sent (the writer's queue has no other gauge).
pub fn counting_analyzer(taken: std::sync::Arc<std::sync::atomic::AtomicU64>) -> TextAnalyzer {
    TextAnalyzer::builder(Counting {
        inner: SimpleTokenizer::default(),
        taken,
    })
    .filter(RemoveLongFilter::limit(MAX_WORD_BYTES + 1))
    .filter(LowerCaser)
    .filter(AsciiFoldingFilter)
    .build()
}

#[derive(Clone)]
struct Counting {
    inner: SimpleTokenizer,
    taken: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl tantivy::tokenizer::Tokenizer for Counting {
    type TokenStream<'a> = <SimpleTokenizer as tantivy::tokenizer::Tokenizer>::TokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        self.taken
            .fetch_add(text.len() as u64, std::sync::atomic::Ordering::Relaxed);
        self.inner.token_stream(text)
    }
}

/// The words of `text` as the index sees them.
pub fn analyze(text: &str) -> Vec<String> {
    let mut a = analyzer();
    let mut stream = a.token_stream(text);
    let mut out = Vec::new();
    while let Some(t) = stream.next() {
        out.push(t.text.clone());
    }
    out
}

#[derive(Clone)]
pub struct Fields {
    pub schema: Schema,
    /// Message text, or a session's title: analyzed with positions, stored.
    pub text: Field,
    /// The session (hash of its source, namespace and folder): on every document.
    pub sid: Field,
    /// The source it came from (hash of agent and root): on every document.
    pub src: Field,
    /// Only on a session's own document: its `sid`.
    pub session_of: Field,
    pub agent: Field,
    pub cwd: Field,
    /// Milliseconds since the epoch: the message's time, else its session's update.
    pub ts: Field,
    /// JSON: what a hit shows (message) or the session's facts and state (session).
    pub info: Field,
    /// 1 on session documents (to find them all), absent on messages.
    pub kind: Field,
    /// Session documents: the stamp of the file as indexed, how many messages were
    /// indexed and the chained identity of those messages (`extract::identity`).
    pub size: Field,
    pub mtime: Field,
    pub count: Field,
    pub prefix: Field,
    /// The source's mark of where the session's messages were read to
    /// (`SessionSource::each_message_since`), four numbers.
    pub mark: [Field; 4],
}

impl Fields {
    pub fn new() -> Fields {
        let mut b = Schema::builder();
        let text_indexing = TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions);
        let text = b.add_text_field(
            "text",
            TextOptions::default()
                .set_indexing_options(text_indexing)
                .set_stored(),
        );
        let sid = b.add_u64_field("sid", INDEXED | FAST);
        let src = b.add_u64_field("src", INDEXED | FAST);
        let session_of = b.add_u64_field("session_of", INDEXED);
        let agent = b.add_text_field("agent", STRING);
        let cwd = b.add_text_field("cwd", STRING);
        let ts = b.add_i64_field("ts", INDEXED | FAST);
        let info = b.add_text_field("info", STORED);
        let kind = b.add_u64_field("kind", INDEXED | STORED);
        let size = b.add_u64_field("size", FAST);
        let mtime = b.add_i64_field("mtime", FAST);
        let count = b.add_u64_field("count", FAST);
        let prefix = b.add_u64_field("prefix", FAST);
        let mark = MARK_FIELDS.map(|name| b.add_u64_field(name, FAST));
        Fields {
            schema: b.build(),
            text,
            sid,
            src,
            session_of,
            agent,
            cwd,
            ts,
            info,
            kind,
            size,
            mtime,
            count,
            prefix,
            mark,
        }
    }
}

impl Default for Fields {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_fold_case_and_accents_and_drop_long_runs() {
        assert_eq!(
            analyze("Flaky_TEST in Café-Straße: naïve 42x"),
            ["flaky", "test", "in", "cafe", "strasse", "naive", "42x"]
        );
        let long = "a".repeat(MAX_WORD_BYTES + 1);
        assert_eq!(analyze(&format!("x {long} y")), ["x", "y"]);
        assert_eq!(analyze(&"b".repeat(MAX_WORD_BYTES)).len(), 1);
    }
}
