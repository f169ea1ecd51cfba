//! Strict JSON validation in one pass that also splits the top-level object into its
//! fields. It accepts exactly what `serde_json::from_str::<serde_json::Value>` accepts
//! (the tests and the `strict_json` fuzz target hold it to that), without building a
//! value: control lines are validated on every append, so this is on the hot path.
//!
//! What serde_json refuses and a lax scanner would not: control characters in strings,
//! lone or mismatched surrogate escapes, nesting 128 deep, and numbers that overflow
//! an f64 (`1e400`).

use std::borrow::Cow;
use std::fmt;

/// One field of an object: the decoded key and the raw value, a slice of the input
/// without surrounding whitespace (what `serde_json::value::RawValue` gives).
pub type Field<'a> = (Cow<'a, str>, &'a str);

/// serde_json refuses the 128th nested array or object (its recursion limit).
const MAX_DEPTH: u32 = 127;

/// Numbers at most this long without an exponent cannot overflow an f64 (their
/// integer part is below 1e300), so only longer ones are checked by value.
const SAFE_NUMBER_LEN: usize = 300;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Byte offset into the scanned text.
    pub pos: usize,
    pub what: &'static str,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.pos)
    }
}

impl std::error::Error for Error {}

/// Validates `text` as one JSON value (surrounding JSON whitespace allowed). For an
/// object, returns its top-level fields in order (duplicates kept, as written);
/// `None` for any other valid value.
pub fn scan(text: &str) -> Result<Option<Vec<Field<'_>>>, Error> {
    let mut fields = Vec::with_capacity(8);
    let is_object = document(text, Some(&mut fields))?;
    Ok(is_object.then_some(fields))
}

/// Validates `text` as one JSON value, as [`scan`] does.
pub fn validate(text: &str) -> Result<(), Error> {
    document(text, None).map(|_| ())
}

/// One value with whitespace around it; whether it is an object, whose fields go
/// to `fields`.
fn document<'a>(text: &'a str, fields: Option<&mut Vec<Field<'a>>>) -> Result<bool, Error> {
    let mut s = Scanner {
        text,
        b: text.as_bytes(),
        i: 0,
    };
    s.ws();
    let is_object = s.peek() == Some(b'{');
    s.value(fields.filter(|_| is_object))?;
    s.ws();
    if s.i != s.b.len() {
        return Err(s.err("trailing characters"));
    }
    Ok(is_object)
}

/// A string as written (a key, or the text under serde_json's raw value token),
/// decoded only when it is needed (top-level keys, that text).
struct RawString<'a> {
    raw: &'a str,
    escaped: bool,
}

/// The key serde_json's `raw_value` feature gives a meaning of its own: an object
/// whose first key it is becomes, in a `Value`, the JSON text of its string value.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

impl<'a> RawString<'a> {
    fn is_raw_value_token(&self) -> bool {
        if self.escaped {
            unescape(self.raw) == RAW_VALUE_TOKEN
        } else {
            self.raw == RAW_VALUE_TOKEN
        }
    }

    fn decode(self) -> Cow<'a, str> {
        if self.escaped {
            Cow::Owned(unescape(self.raw))
        } else {
            Cow::Borrowed(self.raw)
        }
    }
}

struct Scanner<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
}

/// Byte `c` in every lane.
#[cfg(not(target_arch = "x86_64"))]
const fn lanes(c: u8) -> u64 {
    u64::from_ne_bytes([c; 8])
}

/// High bit set in each lane of `w` that is below `n` (n <= 128). Lanes above a true
/// hit may be flagged falsely (borrows), so only the lowest flag is exact.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn lanes_below(w: u64, n: u8) -> u64 {
    w.wrapping_sub(lanes(n)) & !w & lanes(0x80)
}

/// From `i` inside a string, past every plain byte and simple escape (`\n`, `\"`,
/// ...): the position of the closing quote, or of what the scalar loop after this
/// reads itself (a `\u` escape, a bad escape, a control character, the last bytes);
/// and whether it passed an escape.
#[cfg(target_arch = "x86_64")]
#[inline]
fn to_special(b: &[u8], mut i: usize) -> (usize, bool) {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let mut escaped = false;
    // Sixteen bytes at a time (SSE2, in every x86-64 CPU), taking the simple escapes
    // of a block without leaving it: tool output is long strings with a `\n` every
    // few dozen bytes.
    // SAFETY: SSE2 is part of x86-64; every load reads 16 bytes of `b` (no alignment
    // needed).
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let below_space = _mm_set1_epi8(0x1F);
        'blocks: while let Some(block) = b.get(i..i + 16) {
            let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
            // A byte is at most 0x1F when its unsigned max with 0x1F is 0x1F.
            let hits = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                _mm_cmpeq_epi8(_mm_max_epu8(v, below_space), below_space),
            );
            let mut mask = _mm_movemask_epi8(hits) as u32;
            while mask != 0 {
                let at = mask.trailing_zeros() as usize;
                if block[at] != b'\\'
                    || !matches!(
                        b.get(i + at + 1),
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't')
                    )
                {
                    return (i + at, escaped);
                }
                escaped = true;
                if at + 1 >= 15 {
                    // The escaped byte ends the block or lies past it: on from the
                    // byte after it.
                    i += at + 2;
                    continue 'blocks;
                }
                // Past the escaped byte (a quote or backslash there is not special).
                mask &= !((4u32 << at) - 1);
            }
            i += 16;
        }
    }
    (i, escaped)
}

/// From `i`, the position of the next quote, backslash or control character, or
/// near it: the scalar loop after this finds the exact one.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn to_special(b: &[u8], mut i: usize) -> (usize, bool) {
    // Eight bytes at a time.
    while let Some(chunk) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let hits = lanes_below(w ^ lanes(b'"'), 1)
            | lanes_below(w ^ lanes(b'\\'), 1)
            | lanes_below(w, 0x20);
        if hits != 0 {
            return (i + hits.trailing_zeros() as usize / 8, false);
        }
        i += 8;
    }
    (i, false)
}

impl<'a> Scanner<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn err(&self, what: &'static str) -> Error {
        Error { pos: self.i, what }
    }

    fn eof_or(&self, what: &'static str) -> Error {
        self.err(if self.i >= self.b.len() {
            "unexpected end of input"
        } else {
            what
        })
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn expect(&mut self, c: u8, what: &'static str) -> Result<(), Error> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.eof_or(what))
        }
    }

    /// One value, arrays and objects without recursion (a kind-per-level bit stack).
    /// With `fields`, the value is the top-level object and its fields are collected.
    fn value(&mut self, mut fields: Option<&mut Vec<Field<'a>>>) -> Result<(), Error> {
        // Bit d set: level d+1 is an object. MAX_DEPTH < 128 levels fit.
        let mut objects: u128 = 0;
        let mut depth: u32 = 0;
        let mut key: Cow<'a, str> = Cow::Borrowed("");
        let mut value_start = 0;
        // After serde_json's raw value token and its string: only `}` may follow.
        let mut must_close = false;
        loop {
            // A value starts here (whitespace already skipped).
            if depth == 1 {
                value_start = self.i;
            }
            match self.peek() {
                Some(b'{') => {
                    self.i += 1;
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Err(self.err("nesting too deep"));
                    }
                    objects |= 1 << (depth - 1);
                    self.ws();
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                        depth -= 1;
                        objects &= !(1 << depth);
                    } else {
                        let k = self.key()?;
                        let token = k.is_raw_value_token();
                        if depth == 1 && fields.is_some() {
                            key = k.decode();
                        }
                        if !token {
                            continue;
                        }
                        // serde_json's `Value` takes such an object as the JSON text
                        // inside its one string value (its `raw_value` feature).
                        if depth == 1 {
                            value_start = self.i;
                        }
                        self.raw_value_text()?;
                        must_close = true;
                    }
                }
                Some(b'[') => {
                    self.i += 1;
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Err(self.err("nesting too deep"));
                    }
                    self.ws();
                    if self.peek() == Some(b']') {
                        self.i += 1;
                        depth -= 1;
                    } else {
                        continue;
                    }
                }
                Some(b'"') => {
                    self.i += 1;
                    self.string()?;
                }
                Some(b'-' | b'0'..=b'9') => self.number()?,
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                _ => return Err(self.eof_or("expected a value")),
            }
            // A value ended here, inside the container at `depth`.
            loop {
                if depth == 0 {
                    return Ok(());
                }
                if depth == 1
                    && let Some(f) = fields.as_deref_mut()
                {
                    f.push((std::mem::take(&mut key), &self.text[value_start..self.i]));
                }
                self.ws();
                if std::mem::take(&mut must_close) && self.peek() != Some(b'}') {
                    return Err(self.eof_or("expected '}' after serde_json's raw value token"));
                }
                let in_object = objects & (1 << (depth - 1)) != 0;
                match self.peek() {
                    Some(b',') => {
                        self.i += 1;
                        self.ws();
                        if in_object {
                            let k = self.key()?;
                            if depth == 1 && fields.is_some() {
                                key = k.decode();
                            }
                        }
                        break;
                    }
                    Some(b'}') if in_object => {
                        self.i += 1;
                        depth -= 1;
                        objects &= !(1 << depth);
                    }
                    Some(b']') if !in_object => {
                        self.i += 1;
                        depth -= 1;
                    }
                    _ if in_object => return Err(self.eof_or("expected ',' or '}'")),
                    _ => return Err(self.eof_or("expected ',' or ']'")),
                }
            }
        }
    }

    /// The value of serde_json's raw value token: a string whose text is itself one
    /// JSON value (validated as a document of its own, as serde_json does).
    fn raw_value_text(&mut self) -> Result<(), Error> {
        let start = self.i + 1;
        let text = self
            .quoted("expected a string after serde_json's raw value token")?
            .decode();
        validate(&text).map_err(|_| Error {
            pos: start,
            what: "not JSON inside serde_json's raw value token",
        })
    }

    /// A string (`what` if there is none), as written.
    fn quoted(&mut self, what: &'static str) -> Result<RawString<'a>, Error> {
        if self.peek() != Some(b'"') {
            return Err(self.eof_or(what));
        }
        self.i += 1;
        let start = self.i;
        let escaped = self.string()?;
        Ok(RawString {
            raw: &self.text[start..self.i - 1],
            escaped,
        })
    }

    /// `"key"`, whitespace, `:`, whitespace.
    fn key(&mut self) -> Result<RawString<'a>, Error> {
        let key = self.quoted("expected a string key")?;
        self.ws();
        self.expect(b':', "expected ':'")?;
        self.ws();
        Ok(key)
    }

    /// The rest of a string after its opening quote; returns whether it had escapes.
    #[inline]
    fn string(&mut self) -> Result<bool, Error> {
        let mut escaped = false;
        loop {
            let (at, passed) = to_special(self.b, self.i);
            self.i = at;
            escaped |= passed;
            while let Some(c) = self.peek() {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            match self.peek() {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(escaped);
                }
                Some(b'\\') => {
                    self.i += 1;
                    self.escape()?;
                    escaped = true;
                }
                Some(_) => return Err(self.err("control character in a string")),
                None => return Err(self.err("unexpected end of input")),
            }
        }
    }

    /// After a backslash: one escape, with `\u` surrogates paired as serde_json wants.
    fn escape(&mut self) -> Result<(), Error> {
        match self.peek() {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                self.i += 1;
                Ok(())
            }
            Some(b'u') => {
                self.i += 1;
                let n = self.hex4()?;
                if (0xDC00..=0xDFFF).contains(&n) {
                    return Err(self.err("lone surrogate in \\u escape"));
                }
                if (0xD800..=0xDBFF).contains(&n) {
                    if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                        return Err(self.eof_or("lone surrogate in \\u escape"));
                    }
                    self.i += 2;
                    if !(0xDC00..=0xDFFF).contains(&self.hex4()?) {
                        return Err(self.err("lone surrogate in \\u escape"));
                    }
                }
                Ok(())
            }
            _ => Err(self.eof_or("invalid escape")),
        }
    }

    fn hex4(&mut self) -> Result<u16, Error> {
        let Some(digits) = self.b.get(self.i..self.i + 4) else {
            return Err(self.err("unexpected end of input"));
        };
        let mut n = 0u16;
        for &d in digits {
            let v = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return Err(self.err("invalid escape")),
            };
            n = n << 4 | v as u16;
        }
        self.i += 4;
        Ok(n)
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<(), Error> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.eof_or("invalid number")),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(self.eof_or("invalid number"));
            }
        }
        let mut exponent = false;
        if let Some(b'e' | b'E') = self.peek() {
            exponent = true;
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(self.eof_or("invalid number"));
            }
        }
        // Whether a number overflows depends on serde_json's own float conversion;
        // rare enough to ask it.
        if (exponent || self.i - start > SAFE_NUMBER_LEN)
            && serde_json::from_str::<serde_json::Value>(&self.text[start..self.i]).is_err()
        {
            return Err(Error {
                pos: start,
                what: "number out of range",
            });
        }
        Ok(())
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), Error> {
        for &c in word {
            self.expect(c, "expected a value")?;
        }
        Ok(())
    }
}

/// Decodes the content of a string that [`scan`] or [`validate`] accepted (between
/// its quotes). On anything else the result is unspecified but there is no panic.
pub fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let b = rest.as_bytes();
        let (c, used) = match b.get(at + 1) {
            Some(b'b') => ('\u{8}', 2),
            Some(b'f') => ('\u{c}', 2),
            Some(b'n') => ('\n', 2),
            Some(b'r') => ('\r', 2),
            Some(b't') => ('\t', 2),
            Some(b'u') => {
                let hi = hex_at(rest, at + 2);
                match hi {
                    0xD800..=0xDBFF => {
                        let lo = hex_at(rest, at + 8);
                        let n = 0x10000 + ((hi - 0xD800) << 10 | lo.wrapping_sub(0xDC00) & 0x3FF);
                        (char::from_u32(n).unwrap_or('\u{FFFD}'), 12)
                    }
                    n => (char::from_u32(n).unwrap_or('\u{FFFD}'), 6),
                }
            }
            Some(&c) if c.is_ascii() => (c as char, 2),
            _ => ('\u{FFFD}', 1),
        };
        out.push(c);
        rest = rest.get(at + used..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

fn hex_at(s: &str, at: usize) -> u32 {
    s.get(at..at + 4)
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .unwrap_or(0xFFFD)
}

/// The value of a string token [`scan`] accepted (quotes included), borrowed when it
/// has no escapes; `None` if the token is not a string.
pub fn string_value(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    Some(if inner.contains('\\') {
        Cow::Owned(unescape(inner))
    } else {
        Cow::Borrowed(inner)
    })
}

/// The fields of an object [`scan`] already accepted (e.g. a nested value of the top
/// object), without validating again. Yields nothing if `obj` is not an object.
pub fn valid_object_fields(obj: &str) -> ValidFields<'_> {
    let b = obj.as_bytes();
    let mut i = 0;
    while i < b.len() && is_ws(b[i]) {
        i += 1;
    }
    let i = if b.get(i) == Some(&b'{') {
        i + 1
    } else {
        b.len()
    };
    ValidFields { text: obj, i }
}

pub struct ValidFields<'a> {
    text: &'a str,
    i: usize,
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

impl<'a> ValidFields<'a> {
    fn ws(&mut self) {
        let b = self.text.as_bytes();
        while self.i < b.len() && is_ws(b[self.i]) {
            self.i += 1;
        }
    }

    /// Past the string whose opening quote is at `self.i`. Looks for quotes only (a
    /// quote is inside the string when an odd run of backslashes precedes it): tool
    /// output has a `\n` every few dozen bytes, and stopping at each backslash was
    /// most of the time spent here.
    fn skip_string(&mut self) {
        let b = self.text.as_bytes();
        let start = self.i + 1;
        let mut from = start;
        while let Some(at) = memchr::memchr(b'"', &b[from..]) {
            let quote = from + at;
            let backslashes = b[start..quote]
                .iter()
                .rev()
                .take_while(|&&c| c == b'\\')
                .count();
            if backslashes % 2 == 0 {
                self.i = quote + 1;
                return;
            }
            from = quote + 1;
        }
        self.i = b.len();
    }

    fn skip_value(&mut self) {
        let b = self.text.as_bytes();
        match b.get(self.i) {
            Some(b'"') => {
                self.skip_string();
            }
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                while let Some(&c) = b.get(self.i) {
                    match c {
                        b'"' => {
                            self.skip_string();
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return;
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                while self.i < b.len()
                    && !matches!(b[self.i], b',' | b'}' | b']')
                    && !is_ws(b[self.i])
                {
                    self.i += 1;
                }
            }
        }
    }
}

/// The items of an array [`scan`] already accepted (e.g. a nested value of the top
/// object), without validating again. Yields nothing if `arr` is not an array.
pub fn valid_array_items(arr: &str) -> ValidItems<'_> {
    let mut fields = valid_object_fields("");
    fields.text = arr;
    fields.ws();
    fields.i = if arr.as_bytes().get(fields.i) == Some(&b'[') {
        fields.i + 1
    } else {
        arr.len()
    };
    ValidItems(fields)
}

pub struct ValidItems<'a>(ValidFields<'a>);

impl<'a> Iterator for ValidItems<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let f = &mut self.0;
        f.ws();
        if matches!(f.text.as_bytes().get(f.i), None | Some(b']')) {
            f.i = f.text.len();
            return None;
        }
        let start = f.i;
        f.skip_value();
        let value = f.text.get(start..f.i)?;
        f.ws();
        f.i += 1; // ',' or ']'
        Some(value)
    }
}

impl<'a> Iterator for ValidFields<'a> {
    type Item = Field<'a>;

    fn next(&mut self) -> Option<Field<'a>> {
        self.ws();
        if self.text.as_bytes().get(self.i) != Some(&b'"') {
            self.i = self.text.len();
            return None;
        }
        let start = self.i + 1;
        self.skip_string();
        let raw_key = self.text.get(start..self.i - 1)?;
        let key = if raw_key.contains('\\') {
            Cow::Owned(unescape(raw_key))
        } else {
            Cow::Borrowed(raw_key)
        };
        self.ws();
        self.i += 1; // ':'
        self.ws();
        let value_start = self.i;
        self.skip_value();
        let value = self.text.get(value_start..self.i)?;
        self.ws();
        self.i += 1; // ',' or '}'
        Some((key, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::RawObject;
    use proptest::prelude::*;

    fn serde_accepts(text: &str) -> bool {
        serde_json::from_str::<serde_json::Value>(text).is_ok()
    }

    /// The scanner against serde_json on one text: same verdict, and for an object
    /// the same fields as `RawObject` (also through the non-validating splitter).
    fn check(text: &str) {
        // What readers take a line's fields from: RawObject's verdict and fields.
        let theirs = RawObject::parse(text)
            .ok()
            .map(|o| o.fields.into_iter().map(|(k, v)| (k, v.get())).collect());
        assert_eq!(crate::json::object_fields(text), theirs, "{text:?}");
        let ours = scan(text);
        assert_eq!(
            ours.is_ok(),
            serde_accepts(text),
            "verdicts differ on {text:?}: {ours:?}"
        );
        assert_eq!(validate(text).is_ok(), ours.is_ok(), "{text:?}");
        let Ok(Some(fields)) = ours else { return };
        let theirs = RawObject::parse(text).expect("serde accepted an object");
        let theirs: Vec<(&str, &str)> = theirs
            .fields
            .iter()
            .map(|(k, v)| (k.as_ref(), v.get()))
            .collect();
        let ours: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (k.as_ref(), *v)).collect();
        assert_eq!(ours, theirs, "{text:?}");
        let split: Vec<Field<'_>> = valid_object_fields(text).collect();
        assert_eq!(split, fields, "{text:?}");
        for (_, v) in &fields {
            if let Ok(items) = serde_json::from_str::<Vec<&serde_json::value::RawValue>>(v) {
                let items: Vec<&str> = items.iter().map(|i| i.get()).collect();
                assert_eq!(valid_array_items(v).collect::<Vec<_>>(), items, "{v:?}");
            }
        }
        for (_, v) in &fields {
            assert_eq!(
                string_value(v).map(Cow::into_owned),
                serde_json::from_str::<String>(v).ok(),
                "{v:?}"
            );
            if v.starts_with('{') {
                let nested: Vec<Field<'_>> = valid_object_fields(v).collect();
                let theirs = RawObject::parse(v).unwrap();
                let theirs: Vec<(&str, &str)> = theirs
                    .fields
                    .iter()
                    .map(|(k, v)| (k.as_ref(), v.get()))
                    .collect();
                let nested: Vec<(&str, &str)> =
                    nested.iter().map(|(k, v)| (k.as_ref(), *v)).collect();
                assert_eq!(nested, theirs, "{v:?}");
            }
        }
    }

    /// Every kind of escape, quote and control character at every place around the
    /// string scanner's 16-byte blocks, in strings that end there or go on, and cut
    /// short anywhere.
    #[test]
    fn strings_across_block_edges_match_serde_json() {
        let specials = [
            "\\\"",
            "\\\\",
            "\\n",
            "\\/",
            "\\u00e9",
            "\\ud83d\\ude00",
            "\\ud83d",
            "\\x",
            "\\",
            "\u{1}",
            "\u{1f}",
            "\u{7f}",
            "é",
            "\"",
            "\\n\\n",
            "\\\\\\\"",
            "\\\\\"",
        ];
        for before in 0..36 {
            for special in specials {
                for after in [0, 1, 2, 15, 17] {
                    let text = format!(
                        "{{\"k\":\"{}{}{}\",\"z\":1}}",
                        "a".repeat(before),
                        special,
                        "b".repeat(after)
                    );
                    check(&text);
                    for cut in (0..text.len()).filter(|&c| text.is_char_boundary(c)) {
                        check(&text[..cut]);
                    }
                }
            }
        }
    }

    /// serde_json's `raw_value` feature reads an object whose first key is its token
    /// as the JSON text inside the string value (a case the fuzz target found).
    #[test]
    fn serde_jsons_raw_value_token_is_read_as_serde_json_does() {
        let t = RAW_VALUE_TOKEN;
        for text in [
            format!("{{\"{t}\":\"1\"}}"),
            format!("{{ \"{t}\" : \" [1, {{}}] \" }}"),
            format!("{{\"{t}\":1}}"),
            format!("{{\"{t}\":[1,{{\"a\":\"x\\\\\"}}]}}"),
            format!("{{\"{t}\":\"[1,\"}}"),
            format!("{{\"{t}\":\"1\",\"a\":2}}"),
            format!("{{\"{t}\":\"1\" 2}}"),
            format!("{{\"{t}\":\"1\""),
            format!("{{\"{t}\""),
            format!("{{\"a\":1,\"{t}\":2}}"),
            format!("[{{\"{t}\":\"{{}}\"}},{{\"{t}\":\"x\"}}]"),
            format!("[{{\"{t}\":\"{{}}\"}},3]"),
            format!("{{\"b\":{{\"{t}\":\"null\"}}}}"),
            "{\"\\u0024serde_json::private::RawValue\":\"x\"}".to_string(),
            "{\"\\u0024serde_json::private::RawValue\":\"true\"}".to_string(),
            format!("{{\"{t}\":\"{{\\\"{t}\\\":\\\"2\\\"}}\"}}"),
            format!("{{\"{t}\":\"{{\\\"{t}\\\":2}}\"}}"),
            format!("{{\"{t}x\":1}}"),
        ] {
            check(&text);
        }
    }

    #[test]
    fn edge_cases_match_serde_json() {
        for text in [
            "",
            " ",
            "{",
            "}",
            "{}",
            " {} ",
            "[]",
            "[ ]",
            "{ }",
            "\u{c}{}",
            "{}\u{c}",
            "\u{a0}{}",
            "null",
            "nul",
            "nulll",
            "true",
            "tru",
            "false",
            "[true,]",
            "[,1]",
            "[1,,2]",
            "{\"a\":1,}",
            "{,}",
            "{\"a\"}",
            "{\"a\":}",
            "{\"a\" 1}",
            "{1:2}",
            "{\"a\":1 \"b\":2}",
            "[1 2]",
            "[1]]",
            "{\"a\":1}}",
            "[}",
            "{]",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\ud800\\u0041\"",
            "\"\\ud800\\udc00\"",
            "\"\\uDBFF\\uDFFF\"",
            "\"\\ud800\\ud800\\udc00\"",
            "\"\\ud800\\\"",
            "\"\\ud800\\n\"",
            "\"\\ud800",
            "\"\\ud800\\",
            "\"\\ud800\\u",
            "\"\\ud800\\udc0",
            "\"\\u\"",
            "\"\\u12\"",
            "\"\\u12g4\"",
            "\"\\x\"",
            "\"\\U0041\"",
            "\"\\'\"",
            "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
            "\"\u{0}\"",
            "\"\u{1f}\"",
            "\"\u{7f}\"",
            "\"\t\"",
            "\"é日本\u{10ffff}\"",
            "\"abc",
            "\"abc\\",
            "0",
            "-0",
            "00",
            "01",
            "-",
            "-a",
            "+1",
            ".5",
            "1.",
            "1.e5",
            "1.5",
            "1e",
            "1e+",
            "1E-2",
            "1e5",
            "1e308",
            "1e309",
            "1.7976931348623157e308",
            "1.7976931348623159e308",
            "1e400",
            "-1e400",
            "1e-400",
            "0e999999999999999999999",
            "1e999999999999999999",
            "1e-999999999999999999",
            "0.0e99999",
            "18446744073709551616",
            "-9223372036854775809",
            "1 ",
            " 1",
            "1 2",
            "[1true]",
            "{\"a\":1}x",
            "{\"a\":1,\"a\":2}",
            "{\"\\u0061\":1,\"a\":2}",
            "{\"k\\n\":[1,{\"x\":null}]}",
            "{ \"a\" : 1 , \"b\" :\t[ 1 ,2 ]\r\n}",
        ] {
            check(text);
        }
        for n in [295, 300, 301, 305, 308, 309, 310, 320, 400] {
            let digits = "9".repeat(n);
            check(&digits);
            check(&format!("-{digits}"));
            check(&format!("1{}", "0".repeat(n)));
            check(&format!("0.{digits}"));
            check(&format!("{{\"n\":{digits}.5}}"));
        }
    }

    #[test]
    fn nesting_limit_is_serde_jsons() {
        for d in 120..=130 {
            check(&format!("{}{}", "[".repeat(d), "]".repeat(d)));
            check(&format!("{}1{}", "[".repeat(d), "]".repeat(d)));
            check(&format!("{}{{}}{}", "{\"a\":".repeat(d), "}".repeat(d)));
            check(&format!(
                "{}[]{}",
                "{\"a\":[".repeat(d / 2),
                "]}".repeat(d / 2)
            ));
        }
        let ok = format!(
            "{}{}",
            "[".repeat(MAX_DEPTH as usize),
            "]".repeat(MAX_DEPTH as usize)
        );
        assert!(scan(&ok).is_ok());
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(scan(&deep).unwrap_err().what, "nesting too deep");
    }

    #[test]
    fn fields_borrow_unless_escaped() {
        let fields = scan(r#" {"a" : "x" ,"b\n":[1, 2] } "#).unwrap().unwrap();
        assert!(matches!(fields[0].0, Cow::Borrowed("a")));
        assert_eq!(fields[0].1, "\"x\"");
        assert!(matches!(&fields[1].0, Cow::Owned(k) if k == "b\n"));
        assert_eq!(fields[1].1, "[1, 2]");
        assert_eq!(scan("[1]").unwrap(), None);
        let e = scan(r#"{"a":"\ud800"}"#).unwrap_err();
        assert_eq!(e.to_string(), "lone surrogate in \\u escape at byte 12");
    }

    /// Escapes as written inside a string: those serde_json takes, then those it refuses.
    const GOOD_ESCAPES: &[&str] = &[
        r"\n",
        r#"\""#,
        r"\\",
        r"\/",
        r"\b",
        r"\f",
        r"\r",
        r"\t",
        r"\u00e9",
        r"\u0000",
        r"\u001F",
        r"\uD83D\uDE00",
        r"\udbff\udfff",
        r"\ud800\udc00",
        r"\uFFFF",
        r"\u0022",
    ];
    const BAD_ESCAPES: &[&str] = &[
        r"\ud800",
        r"\udc00",
        r"\udfff",
        r"\ud800\u0041",
        r"\ud800\ud800",
        r"\ud800\n",
        r"\ud800x",
        r"\ud800\",
        r"\ud800\u",
        r"\x",
        r"\u12",
        r"\u12G4",
        r"\U0041",
        r"\'",
        r"\",
        "\u{0}",
        "\u{1}",
        "\n",
        "\t",
        "\u{1f}",
    ];

    /// Mostly valid, so that documents of many tokens are still often valid.
    fn string_token() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            40 => "[a-z \"é日😀\u{7f}]{0,6}".prop_map(|s| s.replace('"', "")),
            10 => prop::sample::select(GOOD_ESCAPES).prop_map(str::to_string),
            1 => prop::sample::select(BAD_ESCAPES).prop_map(str::to_string),
        ];
        prop::collection::vec(piece, 0..5).prop_map(|p| format!("\"{}\"", p.concat()))
    }

    fn number_token() -> impl Strategy<Value = String> {
        let normal = "-?(0|[1-9][0-9]{0,19})(\\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?";
        // Where serde_json's range checks bite: f64 overflow, long digit strings,
        // exponents too big for an i32 (fine when the significand is 0 or negative).
        let edge = (
            "-?",
            "0|1|9|[1-9][0-9]{290,320}|1\\.7976931348623157|1\\.7976931348623159",
            "|\\.[0-9]{1,3}|\\.[0-9]{300,320}",
            "|[eE][+-]?(30[6-9]|3[1-4][0-9]|40[0-9])|e-?[0-9]{19,22}|e\\+?0+[0-9]{1,3}",
        )
            .prop_map(|(s, i, f, e)| format!("{s}{i}{f}{e}"));
        let bad = "00|01|-|\\+1|1\\.|\\.5|1e|1e\\+|-\\.1|1\\.e5|0x1|1_0";
        prop_oneof![10 => normal.boxed(), 4 => edge.boxed(), 1 => bad.boxed()]
    }

    fn key_token() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => prop::sample::select(&["\"a\"", "\"b\"", "\"role\"", "\"\\u0061\"", "\"é\"", "\"\""][..])
                .prop_map(str::to_string),
            1 => string_token(),
        ]
    }

    /// JSON whitespace, and rarely what is not.
    fn ws() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            60 => prop::sample::select(&["", "", "", " ", "\n", "\t", "\r\n  "][..]),
            1 => prop::sample::select(&["\u{c}", "\u{a0}", "\u{b}"][..]),
        ]
    }

    fn value_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            20 => prop::sample::select(&["null", "true", "false"][..]).prop_map(str::to_string),
            1 => prop::sample::select(&["tru", "nul", "True", "nulll"][..]).prop_map(str::to_string),
            20 => number_token(),
            40 => string_token(),
        ];
        leaf.prop_recursive(5, 48, 5, |inner| {
            prop_oneof![
                prop::collection::vec((ws(), inner.clone(), ws()), 0..5).prop_map(|items| {
                    let items: Vec<String> = items
                        .into_iter()
                        .map(|(a, v, b)| format!("{a}{v}{b}"))
                        .collect();
                    format!("[{}]", items.join(","))
                }),
                prop::collection::vec((key_token(), ws(), inner), 0..5).prop_map(|fields| {
                    let fields: Vec<String> = fields
                        .into_iter()
                        .map(|(k, w, v)| format!("{k}{w}:{v}"))
                        .collect();
                    format!("{{{}}}", fields.join(","))
                }),
            ]
        })
    }

    /// Values near the nesting limit, closed properly or not.
    fn deep_text() -> impl Strategy<Value = String> {
        (118usize..132, 0..3, value_text(), prop::bool::weighted(0.2)).prop_map(
            |(d, kind, core, mismatch)| {
                let (open, close) = match kind {
                    0 => ("{\"k\":", "}"),
                    1 => ("[", "]"),
                    _ => ("[{\"k\":", "}]"),
                };
                let d = if kind == 2 { d / 2 } else { d };
                let mut t = format!("{}{core}{}", open.repeat(d), close.repeat(d));
                if mismatch {
                    t.pop();
                    t.push(if close.ends_with(']') { '}' } else { ']' });
                }
                t
            },
        )
    }

    /// Snippets dropped into a text at random places or right after a quote (so often
    /// inside a string).
    const SNIPPETS: &[&str] = &[
        r"\ud800",
        r"\udc00",
        r"\ud800\u0041",
        r"\ud83d\ude00",
        r"\n",
        "\"",
        "\\",
        ",",
        ":",
        "[",
        "]",
        "{",
        "}",
        "\u{1}",
        "\t",
        "\u{c}",
        " ",
        "é",
        "日",
        "1e400",
        "-0",
        "01",
        "1.",
        ".5",
        "null",
        "\"a\":1,",
        "\"a\":",
        "\u{0}",
        "😀",
        "\"role\":\"user\",",
    ];

    #[derive(Debug, Clone)]
    enum Mutation {
        Insert(prop::sample::Index, &'static str),
        InsertAfterQuote(prop::sample::Index, &'static str),
        Delete(prop::sample::Index, usize),
        Truncate(prop::sample::Index),
    }

    fn mutation() -> impl Strategy<Value = Mutation> {
        let at = any::<prop::sample::Index>;
        prop_oneof![
            2 => (at(), prop::sample::select(SNIPPETS)).prop_map(|(i, s)| Mutation::Insert(i, s)),
            2 => (at(), prop::sample::select(SNIPPETS))
                .prop_map(|(i, s)| Mutation::InsertAfterQuote(i, s)),
            2 => (at(), 1usize..4).prop_map(|(i, n)| Mutation::Delete(i, n)),
            1 => at().prop_map(Mutation::Truncate),
        ]
    }

    fn boundary(text: &str, i: &prop::sample::Index) -> usize {
        let mut at = i.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    fn mutate(mut text: String, mutations: &[Mutation]) -> String {
        for m in mutations {
            match m {
                Mutation::Insert(i, s) => {
                    let at = boundary(&text, i);
                    text.insert_str(at, s);
                }
                Mutation::InsertAfterQuote(i, s) => {
                    let quotes: Vec<usize> = text.match_indices('"').map(|(q, _)| q + 1).collect();
                    if !quotes.is_empty() {
                        text.insert_str(quotes[i.index(quotes.len())], s);
                    }
                }
                Mutation::Delete(i, n) => {
                    let at = boundary(&text, i);
                    let end = text[at..]
                        .char_indices()
                        .nth(*n)
                        .map_or(text.len(), |(e, _)| at + e);
                    text.replace_range(at..end, "");
                }
                Mutation::Truncate(i) => {
                    let at = boundary(&text, i);
                    text.truncate(at);
                }
            }
        }
        text
    }

    fn json_ish() -> impl Strategy<Value = String> {
        let top = prop_oneof![
            6 => prop::collection::vec((ws(), key_token(), ws(), value_text(), ws()), 0..6)
                .prop_map(|fields| {
                    let fields: Vec<String> = fields
                        .into_iter()
                        .map(|(a, k, b, v, c)| format!("{a}{k}{b}:{v}{c}"))
                        .collect();
                    format!("{{{}}}", fields.join(","))
                }),
            2 => value_text(),
            1 => deep_text(),
        ];
        let mutations = prop_oneof![
            3 => Just(Vec::new()),
            2 => prop::collection::vec(mutation(), 1..3),
        ];
        (ws(), top, ws(), mutations).prop_map(|(a, t, b, m)| mutate(format!("{a}{t}{b}"), &m))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn scanner_agrees_with_serde_json(text in json_ish()) {
            check(&text);
        }
    }
}
