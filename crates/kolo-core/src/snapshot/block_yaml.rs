//! A fast reader for the block-style YAML that `kubectl get -o yaml` prints.
//!
//! serde-saphyr reads about 10 MB/s, so a 5,000-node, 50,000-pod dump takes
//! seconds to parse. kubectl (go-yaml via sigs.k8s.io/yaml) only ever prints
//! a small, regular part of YAML: block mappings and sequences, plain or
//! quoted scalars, literal block scalars and the empty flow collections `{}`
//! and `[]`. [`parse`] reads that part about ten times faster, and returns
//! `None` for anything else, or anything it cannot read with certainty
//! *exactly* as `serde_saphyr::from_str::<serde_json::Value>` would. The
//! caller then falls back to serde-saphyr, so refusing only costs time while
//! a wrong `Some` would silently change what kolo loads. Tests and a fuzz
//! target (`fuzz/fuzz_targets/block_yaml.rs`) compare the two readers.
//!
//! The reader writes a [`Tape`] of events borrowing from the text; [`parse`]
//! turns it into a `Value`, and the snapshot loader deserializes typed
//! objects from it directly ([`super::tape`]).
//!
//! What is accepted (everything else is refused):
//!
//! * block mappings whose keys are plain or quoted one-line scalars that
//!   serde-saphyr reads as strings, followed by `: ` or `:` at the end of the
//!   line, and block sequences (`- `), both at any consistent indentation; a
//!   sequence may sit at its parent key's indentation (kubectl's style) and
//!   its entries may be compact (`- key: v`, `- - v`);
//! * plain scalars, typed as serde-saphyr types them (YAML 1.1 booleans in
//!   any letter case, `null`/`Null`/`NULL`/`~`/empty, its integer and float
//!   grammars), and single- and double-quoted scalars with every YAML escape;
//!   all three may continue on more indented lines, as go-yaml wraps long
//!   strings, with YAML's line folding;
//! * literal block scalars `|` with chomping (`-`, `+`) and indentation
//!   (`1`-`9`) indicators, and the empty flow collections `{}` and `[]`;
//! * full-line comments (a few; serde-saphyr limits how many it buffers).
//!
//! Refused, among others: tabs, carriage returns, control and byte-order-mark
//! characters, U+0085/U+2028/U+2029, anchors, aliases, tags, complex keys,
//! merge keys, directives, document markers, flow collections with content,
//! folded block scalars (`>`), empty block scalars, comments after content,
//! duplicate keys, non-finite floats (serde-saphyr rejects them), deep
//! nesting, documents that are not a mapping or a sequence.

use std::borrow::Cow;

use serde_json::{Number, Value};

use super::tape::{Event, Tape};

/// serde-saphyr's default budget stops at depth 64; stay well clear of it.
const MAX_DEPTH: usize = 40;
/// serde-saphyr's default budget allows 250,000 nodes per document.
const MAX_NODES: usize = 100_000;
/// serde-saphyr buffers at most 32 comment events while looking ahead.
const MAX_COMMENT_LINES: usize = 16;
/// serde-saphyr looks at most 1,024 characters ahead for a key's `:`.
const MAX_KEY_BYTES: usize = 512;
/// Well inside serde-saphyr's default 64 MiB scalar and 256 MiB input
/// budgets; pieces of a kubectl dump are a few kilobytes.
const MAX_TEXT_BYTES: usize = 16 << 20;

/// Parses `text` into the value serde-saphyr would produce, or returns `None`
/// when the text is outside the block-style subset this reader handles (see
/// the module documentation). `Some(v)` always equals what
/// `serde_saphyr::from_str::<serde_json::Value>(text)` returns.
pub fn parse(text: &str) -> Option<Value> {
    parse_tape(text).map(|tape| tape.value_at(0))
}

/// [`parse`], but into a [`Tape`] that borrows from `text`, for typed
/// deserialization without a `Value` in between.
pub(crate) fn parse_tape(text: &str) -> Option<Tape<'_>> {
    parse_tape_reusing(text, Vec::new())
}

/// [`parse_tape`] into `buffer` (cleared first), so that a caller reading
/// many documents can reuse one allocation ([`Tape::into_buffer`]).
pub(crate) fn parse_tape_reusing<'a>(
    text: &'a str,
    mut buffer: Vec<Event<'a>>,
) -> Option<Tape<'a>> {
    if text.len() > MAX_TEXT_BYTES || !plain_characters_only(text.as_bytes()) {
        return None;
    }
    buffer.clear();
    let mut p = Parser {
        text,
        b: text.as_bytes(),
        pos: 0,
        comments: 0,
        nodes: 0,
        events: buffer,
        keys: Vec::new(),
    };
    let indent = p.next_content_line()??;
    p.pos += indent;
    p.block_node(indent, 0)?;
    match p.next_content_line()? {
        None => Some(Tape { events: p.events }),
        Some(_) => None,
    }
}

/// Whether every character is one serde-saphyr takes literally everywhere:
/// no tab or carriage return (both change how lines and scalars are cut), no
/// other control character (rejected), no byte-order mark (rejected inside a
/// document), no U+0085/U+2028/U+2029 (line breaks in YAML 1.1) and no
/// U+FFFE/U+FFFF (not printable).
fn plain_characters_only(b: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut chunks = b.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let x = u64::from_ne_bytes(chunk.try_into().unwrap_or_default());
        // Flags (with some false alarms) any byte below 0x20, equal to 0x7f
        // or above it; only such chunks need a closer look. Line breaks make
        // about one chunk in four take the slow path.
        let del = x ^ (ONES * 0x7f);
        let suspect =
            (x | (x.wrapping_sub(ONES * 0x20) & !x) | (del.wrapping_sub(ONES) & !del)) & HIGH;
        if suspect != 0 && !plain_bytes(b, at, at + 8) {
            return false;
        }
        at += 8;
    }
    plain_bytes(b, at, b.len())
}

/// [`plain_characters_only`] for `b[from..to]`. `from` may fall inside a
/// character: continuation bytes are never the lead bytes looked at here.
fn plain_bytes(b: &[u8], from: usize, to: usize) -> bool {
    (from..to).all(|i| match b[i] {
        b'\n' | 0x20..=0x7e => true,
        0x00..=0x1f | 0x7f => false,
        // `b` is valid UTF-8, so a lead byte is followed by its continuation
        // bytes.
        0xc2 => b[i + 1] >= 0xa0,
        0xe2 => !(b[i + 1] == 0x80 && matches!(b[i + 2], 0xa8 | 0xa9)),
        0xef => {
            !((b[i + 1] == 0xbb && b[i + 2] == 0xbf)
                || (b[i + 1] == 0xbf && matches!(b[i + 2], 0xbe | 0xbf)))
        }
        _ => true,
    })
}

struct Parser<'a> {
    text: &'a str,
    b: &'a [u8],
    /// The next byte to read.
    pos: usize,
    comments: usize,
    nodes: usize,
    /// What has been read.
    events: Vec<Event<'a>>,
    /// Tape indices of the keys of the mappings being read, innermost last.
    keys: Vec<usize>,
}

impl<'a> Parser<'a> {
    /// Moves to the start of the next line with content, skipping blank and
    /// comment lines, and returns its indentation (`None` inside: end of
    /// input). `pos` must be at the start of a line. Refuses document markers
    /// and directives.
    fn next_content_line(&mut self) -> Option<Option<usize>> {
        loop {
            let start = self.pos;
            let indent = self.spaces_at(start);
            match self.b.get(start + indent) {
                None => {
                    self.pos = self.b.len();
                    return Some(None);
                }
                Some(b'\n') => self.pos = start + indent + 1,
                Some(b'#') => {
                    self.comments += 1;
                    if self.comments > MAX_COMMENT_LINES {
                        return None;
                    }
                    self.pos = (self.line_end(start) + 1).min(self.b.len());
                }
                Some(&c) => {
                    let line = &self.b[start..];
                    if indent == 0
                        && (c == b'%' || line.starts_with(b"---") || line.starts_with(b"..."))
                    {
                        return None;
                    }
                    return Some(Some(indent));
                }
            }
        }
    }

    fn spaces_at(&self, from: usize) -> usize {
        self.b[from..].iter().take_while(|&&c| c == b' ').count()
    }

    /// The index of the `\n` ending the line that contains `from`, or the
    /// input length.
    fn line_end(&self, from: usize) -> usize {
        // Lines are short: a plain loop beats memchr's setup.
        self.b[from..].iter().position(|&c| c == b'\n').map_or(self.b.len(), |i| from + i)
    }

    fn count_nodes(&mut self, n: usize) -> Option<()> {
        self.nodes += n;
        (self.nodes <= MAX_NODES).then_some(())
    }

    /// Whether a block sequence entry starts at `at`: `-` followed by a
    /// space, a line break or the end of input.
    fn is_entry(&self, at: usize) -> bool {
        self.b.get(at) == Some(&b'-') && matches!(self.b.get(at + 1), None | Some(b' ' | b'\n'))
    }

    /// Whether a mapping entry (`key: ...`) starts at `at`. Only decides
    /// between "mapping" and "not a mapping"; the key itself is checked when
    /// it is read.
    fn is_key(&self, at: usize) -> bool {
        let b = self.b;
        let mut i = at + 1;
        match b[at] {
            b'"' => loop {
                match b.get(i) {
                    None | Some(b'\n') => return false,
                    Some(b'\\') => i += 2,
                    Some(b'"') => break,
                    Some(_) => i += 1,
                }
            },
            b'\'' => loop {
                match b.get(i) {
                    None | Some(b'\n') => return false,
                    Some(b'\'') if b.get(i + 1) == Some(&b'\'') => i += 2,
                    Some(b'\'') => break,
                    Some(_) => i += 1,
                }
            },
            _ => return self.key_colon(at).is_some(),
        }
        b.get(i + 1) == Some(&b':') && matches!(b.get(i + 2), None | Some(b' ' | b'\n'))
    }

    /// The index of the `:` ending a plain key that starts at `at`: the first
    /// `:` followed by a space or the end of the line. `None` when the line
    /// has none, or has a comment (` #`) before it.
    fn key_colon(&self, at: usize) -> Option<usize> {
        let b = self.b;
        let mut i = at;
        loop {
            match *b.get(i)? {
                b':' if matches!(b.get(i + 1), None | Some(b' ' | b'\n')) => return Some(i),
                b' ' if b.get(i + 1) == Some(&b'#') => return None,
                b'\n' => return None,
                _ => i += 1,
            }
        }
    }

    /// The end of the line holding a one-line plain scalar that starts at
    /// `at`; `None` if the line holds a `: ` (a mapping value, an error here)
    /// or a ` #` (a comment).
    fn plain_end(&self, at: usize) -> Option<usize> {
        let b = self.b;
        let mut i = at;
        loop {
            match b.get(i) {
                None | Some(b'\n') => return Some(i),
                Some(b':') if b.get(i + 1) == Some(&b' ') => return None,
                Some(b' ') if b.get(i + 1) == Some(&b'#') => return None,
                Some(_) => i += 1,
            }
        }
    }

    /// The lines continuing a plain scalar whose first line, `first`, ends
    /// at `end`: following lines indented beyond `parent_col`, folded as YAML
    /// folds them. Returns the whole folded text (`None` when the scalar is
    /// one line) and where its last line ends. Continuation lines are
    /// refused unless they are plainly text: a line starting with an
    /// indicator or `#` (a comment, after which more text is an error), or
    /// holding `: ` or ` #`, is left to serde-saphyr.
    fn plain_continuation(
        &self,
        mut end: usize,
        parent_col: usize,
        first: &str,
    ) -> Option<(Option<String>, usize)> {
        let mut folded: Option<String> = None;
        while end < self.b.len() {
            let (next, indent, blank_lines) = self.next_text_line(end + 1);
            if next == self.b.len() || indent <= parent_col {
                break;
            }
            let line_end = self.plain_end(next)?;
            let line = self.text[next..line_end].trim_end_matches(' ');
            if !plain_start(line.as_bytes()) || line.ends_with(':') {
                return None;
            }
            let out = folded.get_or_insert_with(|| first.to_owned());
            if blank_lines == 0 {
                out.push(' ');
            }
            for _ in 0..blank_lines {
                out.push('\n');
            }
            out.push_str(line);
            end = line_end;
        }
        Some((folded, end))
    }

    /// A mapping or sequence starting at `pos`, which is at column `col`.
    fn block_node(&mut self, col: usize, depth: usize) -> Option<()> {
        if self.is_entry(self.pos) {
            self.sequence(col, depth + 1)
        } else if self.is_key(self.pos) {
            self.mapping(col, depth + 1)
        } else {
            None
        }
    }

    /// A block mapping whose first key starts at `pos`, at column `col`.
    fn mapping(&mut self, col: usize, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.count_nodes(1)?;
        let start = self.events.len();
        self.events.push(Event::Map { len: 0, end: 0 });
        // serde-saphyr rejects duplicate keys. kubectl sorts keys, so each
        // key is checked against the one before it, and only unsorted
        // mappings need a full check. Key indices wait on a stack shared by
        // all mappings, which saves growing a vector per mapping.
        let base = self.keys.len();
        let mut sorted = true;
        loop {
            let key = self.key()?;
            if let Some(&previous) = self.keys[base..].last() {
                sorted &= self.key_at(previous) < key.as_ref();
            }
            self.keys.push(self.events.len());
            self.events.push(Event::Str(key));
            self.value_after_colon(col, depth)?;
            self.count_nodes(2)?;
            match self.next_content_line()? {
                Some(indent) if indent == col => {
                    self.pos += col;
                    if self.is_entry(self.pos) {
                        return None;
                    }
                }
                Some(indent) if indent > col => return None,
                _ => break,
            }
        }
        let len = self.keys.len() - base;
        let unique = sorted || {
            let mut keys: Vec<&str> = self.keys[base..].iter().map(|&k| self.key_at(k)).collect();
            keys.sort_unstable();
            keys.windows(2).all(|pair| pair[0] != pair[1])
        };
        self.keys.truncate(base);
        if !unique {
            return None;
        }
        self.events[start] = Event::Map { len, end: self.events.len() };
        Some(())
    }

    /// The key written at tape index `at`.
    fn key_at(&self, at: usize) -> &str {
        match &self.events[at] {
            Event::Str(key) => key,
            _ => "",
        }
    }

    /// A block sequence whose first `-` is at `pos`, at column `col`.
    fn sequence(&mut self, col: usize, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.count_nodes(1)?;
        let start = self.events.len();
        self.events.push(Event::Seq { len: 0, end: 0 });
        let mut len = 0;
        loop {
            self.pos += 1;
            let spaces = self.spaces_at(self.pos);
            self.pos += spaces;
            match self.b.get(self.pos) {
                None | Some(b'\n') => {
                    self.pos = (self.pos + 1).min(self.b.len());
                    self.value_on_next_lines(col, false, depth)?
                }
                Some(_) => {
                    let at = col + 1 + spaces;
                    if self.is_entry(self.pos) {
                        self.sequence(at, depth + 1)?
                    } else if self.b[self.pos] != b'|' && self.is_key(self.pos) {
                        self.mapping(at, depth + 1)?
                    } else {
                        // A block scalar's indentation indicator counts from
                        // the `-`.
                        self.inline_value(col)?
                    }
                }
            }
            self.count_nodes(1)?;
            len += 1;
            match self.next_content_line()? {
                Some(indent) if indent == col && self.is_entry(self.pos + col) => self.pos += col,
                Some(indent) if indent > col => return None,
                _ => break,
            }
        }
        self.events[start] = Event::Seq { len, end: self.events.len() };
        Some(())
    }

    /// The value of a key or `-` that ends its line, with `pos` at the start
    /// of the next line: a more indented collection, a sequence at the same
    /// indentation as its key (kubectl's style, when `same_column_sequence`),
    /// or null.
    fn value_on_next_lines(
        &mut self,
        col: usize,
        same_column_sequence: bool,
        depth: usize,
    ) -> Option<()> {
        match self.next_content_line()? {
            Some(indent) if indent > col => {
                self.pos += indent;
                self.block_node(indent, depth)
            }
            Some(indent)
                if indent == col && same_column_sequence && self.is_entry(self.pos + col) =>
            {
                self.pos += col;
                self.sequence(col, depth + 1)
            }
            _ => {
                self.events.push(Event::Null);
                Some(())
            }
        }
    }

    /// Reads a key and its `:`; `pos` ends just after the `:`.
    fn key(&mut self) -> Option<Cow<'a, str>> {
        let start = self.pos;
        let key = match self.b[start] {
            b'"' => self.double_quoted(None)?,
            b'\'' => self.single_quoted(None)?,
            _ => {
                let colon = self.key_colon(start)?;
                let key: &'a str = &self.text[start..colon];
                self.pos = colon;
                if !plain_start(key.as_bytes())
                    || key.ends_with(' ')
                    || plain_scalar(key)? != Scalar::String
                {
                    return None;
                }
                Cow::Borrowed(key)
            }
        };
        if self.pos - start > MAX_KEY_BYTES || key == "<<" || self.b.get(self.pos) != Some(&b':') {
            return None;
        }
        self.pos += 1;
        if !matches!(self.b.get(self.pos), None | Some(b' ' | b'\n')) {
            return None;
        }
        Some(key)
    }

    /// A mapping value, with `pos` just after the key's `:`.
    fn value_after_colon(&mut self, col: usize, depth: usize) -> Option<()> {
        self.pos += self.spaces_at(self.pos);
        match self.b.get(self.pos) {
            None | Some(b'\n') => {
                self.pos = (self.pos + 1).min(self.b.len());
                self.value_on_next_lines(col, true, depth)
            }
            Some(_) => self.inline_value(col),
        }
    }

    /// A scalar or empty collection that starts at `pos` and ends its line;
    /// `pos` ends at the start of the next line. `parent_col` is the column
    /// of the key or `-` that owns the value.
    fn inline_value(&mut self, parent_col: usize) -> Option<()> {
        let event = match self.b[self.pos] {
            b'|' => return self.literal(parent_col),
            b'"' => Event::Str(self.double_quoted(Some(parent_col))?),
            b'\'' => Event::Str(self.single_quoted(Some(parent_col))?),
            b'{' if self.b.get(self.pos + 1) == Some(&b'}') => {
                self.pos += 2;
                Event::Map { len: 0, end: self.events.len() + 1 }
            }
            b'[' if self.b.get(self.pos + 1) == Some(&b']') => {
                self.pos += 2;
                Event::Seq { len: 0, end: self.events.len() + 1 }
            }
            _ => {
                let start = self.pos;
                let end = self.plain_end(start)?;
                let text: &'a str = self.text;
                let first = text[start..end].trim_end_matches(' ');
                if !plain_start(first.as_bytes()) || first.ends_with(':') {
                    return None;
                }
                let (more, end) = self.plain_continuation(end, parent_col, first)?;
                self.pos = end;
                match more {
                    // Folded lines join with spaces or line breaks, which no
                    // other type's grammar allows: a string.
                    Some(folded) => Event::Str(Cow::Owned(folded)),
                    None => match plain_scalar(first)? {
                        Scalar::Null => Event::Null,
                        Scalar::Bool(b) => Event::Bool(b),
                        Scalar::Number(n) => Event::Number(n),
                        Scalar::String => Event::Str(Cow::Borrowed(first)),
                    },
                }
            }
        };
        self.end_of_line()?;
        self.events.push(event);
        Some(())
    }

    /// Skips trailing spaces and the line break; anything else (a comment,
    /// more content) is refused.
    fn end_of_line(&mut self) -> Option<()> {
        self.pos += self.spaces_at(self.pos);
        match self.b.get(self.pos) {
            None => Some(()),
            Some(b'\n') => {
                self.pos += 1;
                Some(())
            }
            Some(_) => None,
        }
    }

    /// A double-quoted scalar starting at `pos`; `pos` ends after the
    /// closing quote. It may span lines only when `parent_col` is given (a
    /// value, not a key), and then only lines indented beyond `parent_col`.
    fn double_quoted(&mut self, parent_col: Option<usize>) -> Option<Cow<'a, str>> {
        let b = self.b;
        let mut out = String::new();
        let first = self.pos + 1;
        let mut i = first;
        let mut run = i;
        loop {
            match *b.get(i)? {
                b'"' => break,
                b'\n' => {
                    // Spaces before a line break are dropped, and the break
                    // folds into a space or the blank lines after it.
                    out.push_str(self.text[run..i].trim_end_matches(' '));
                    i = self.fold(i + 1, parent_col?, true, &mut out)?;
                    run = i;
                }
                b'\\' if b.get(i + 1) == Some(&b'\n') => {
                    // An escaped line break joins the lines, keeping the
                    // spaces before it.
                    out.push_str(&self.text[run..i]);
                    i = self.fold(i + 2, parent_col?, false, &mut out)?;
                    run = i;
                }
                b'\\' => {
                    out.push_str(&self.text[run..i]);
                    i = escape(b, i + 1, &mut out)?;
                    run = i;
                }
                _ => i += 1,
            }
        }
        self.pos = i + 1;
        Some(self.finish_quoted(out, first, run, i))
    }

    /// A single-quoted scalar starting at `pos`; `pos` ends after the closing
    /// quote. Lines as for [`Self::double_quoted`].
    fn single_quoted(&mut self, parent_col: Option<usize>) -> Option<Cow<'a, str>> {
        let b = self.b;
        let mut out = String::new();
        let first = self.pos + 1;
        let mut i = first;
        let mut run = i;
        loop {
            match *b.get(i)? {
                b'\'' if b.get(i + 1) == Some(&b'\'') => {
                    out.push_str(&self.text[run..=i]);
                    i += 2;
                    run = i;
                }
                b'\'' => break,
                b'\n' => {
                    out.push_str(self.text[run..i].trim_end_matches(' '));
                    i = self.fold(i + 1, parent_col?, true, &mut out)?;
                    run = i;
                }
                _ => i += 1,
            }
        }
        self.pos = i + 1;
        Some(self.finish_quoted(out, first, run, i))
    }

    /// A quoted scalar's text, given the index `first` after its opening
    /// quote: `text[run..end]` itself when the run starts there (nothing
    /// needed unescaping or folding, as in most quoted scalars), else `out`
    /// with the run appended.
    fn finish_quoted(&self, mut out: String, first: usize, run: usize, end: usize) -> Cow<'a, str> {
        let text: &'a str = self.text;
        if run == first {
            return Cow::Borrowed(&text[run..end]);
        }
        out.push_str(&text[run..end]);
        Cow::Owned(out)
    }

    /// Folds the line break before `at` inside a quoted scalar: each blank
    /// line becomes a `\n`; with none, the break becomes a space when
    /// `space` (an unescaped break). Returns where the next line's text
    /// starts, after its indentation, which must exceed `parent_col`
    /// (serde-saphyr rejects less; the end of input is an error too).
    fn fold(&self, at: usize, parent_col: usize, space: bool, out: &mut String) -> Option<usize> {
        let (next, indent, blank_lines) = self.next_text_line(at);
        if indent <= parent_col || next == self.b.len() {
            return None;
        }
        if blank_lines == 0 && space {
            out.push(' ');
        }
        for _ in 0..blank_lines {
            out.push('\n');
        }
        Some(next)
    }

    /// From the start of a line, skips blank lines: returns where the next
    /// non-blank line's text starts (or the end of input), its indentation,
    /// and how many blank lines came before it.
    fn next_text_line(&self, mut at: usize) -> (usize, usize, usize) {
        let mut blank_lines = 0;
        loop {
            let spaces = self.spaces_at(at);
            if self.b.get(at + spaces) == Some(&b'\n') {
                blank_lines += 1;
                at += spaces + 1;
            } else {
                return (at + spaces, spaces, blank_lines);
            }
        }
    }

    /// A literal block scalar whose `|` is at `pos`. An explicit indentation
    /// indicator counts from `parent_col`, the column of the owning key or
    /// `-`, as serde-saphyr counts it.
    fn literal(&mut self, parent_col: usize) -> Option<()> {
        #[derive(PartialEq)]
        enum Chomp {
            Clip,
            Strip,
            Keep,
        }
        let b = self.b;
        let mut i = self.pos + 1;
        let mut chomp = Chomp::Clip;
        let mut explicit = None;
        for _ in 0..2 {
            match b.get(i) {
                Some(b'-') if chomp == Chomp::Clip => chomp = Chomp::Strip,
                Some(b'+') if chomp == Chomp::Clip => chomp = Chomp::Keep,
                Some(&d @ b'1'..=b'9') if explicit.is_none() => {
                    explicit = Some(parent_col + usize::from(d - b'0'));
                }
                _ => break,
            }
            i += 1;
        }
        self.pos = i;
        // The header must end its line: no comment, and a line must follow.
        self.pos += self.spaces_at(self.pos);
        if b.get(self.pos) != Some(&b'\n') {
            return None;
        }
        self.pos += 1;

        let indent = match explicit {
            Some(indent) => indent,
            None => {
                // The first non-blank line sets the indentation.
                let mut at = self.pos;
                loop {
                    let spaces = self.spaces_at(at);
                    match b.get(at + spaces) {
                        Some(b'\n') => at += spaces + 1,
                        Some(_) => break spaces,
                        None => return None,
                    }
                }
            }
        };
        if indent <= parent_col {
            // An empty scalar: rare, and its chomping is not worth the risk.
            return None;
        }

        let mut out = String::new();
        let mut blank_lines = 0;
        let mut content_lines = 0;
        loop {
            let start = self.pos;
            let spaces = self.spaces_at(start);
            match b.get(start + spaces) {
                None if spaces == 0 => break,
                // Spaces without a line break at the end of input, and blank
                // lines with spaces beyond the indentation (content, or an
                // error before the first line): uncommon enough to refuse.
                None => return None,
                Some(b'\n') if spaces > indent => return None,
                Some(b'\n') => {
                    blank_lines += 1;
                    self.pos = start + spaces + 1;
                }
                Some(_) if spaces < indent => break,
                Some(_) => {
                    let end = self.line_end(start);
                    if end == b.len() {
                        // serde-saphyr adds a line break the input lacks.
                        return None;
                    }
                    for _ in 0..blank_lines {
                        out.push('\n');
                    }
                    blank_lines = 0;
                    out.push_str(&self.text[start + indent..end]);
                    out.push('\n');
                    content_lines += 1;
                    self.pos = end + 1;
                }
            }
        }
        if content_lines == 0 {
            return None;
        }
        match chomp {
            Chomp::Clip => {}
            Chomp::Strip => {
                out.pop();
            }
            Chomp::Keep => {
                for _ in 0..blank_lines {
                    out.push('\n');
                }
            }
        }
        self.events.push(Event::Str(Cow::Owned(out)));
        Some(())
    }
}

/// Decodes the escape after a `\` at `b[i - 1]` into `out`; returns the index
/// after it. Unknown escapes and invalid code points are refused, as
/// serde-saphyr rejects them too; so are escaped line breaks, which
/// [`Parser::double_quoted`] handles.
fn escape(b: &[u8], i: usize, out: &mut String) -> Option<usize> {
    let c = match *b.get(i)? {
        b'0' => '\0',
        b'a' => '\x07',
        b'b' => '\x08',
        b't' => '\t',
        b'n' => '\n',
        b'v' => '\x0b',
        b'f' => '\x0c',
        b'r' => '\r',
        b'e' => '\x1b',
        b' ' => ' ',
        b'"' => '"',
        b'/' => '/',
        b'\\' => '\\',
        b'N' => '\u{85}',
        b'_' => '\u{a0}',
        // `\L` and `\P` are left out: they are the only escapes whose
        // character takes more bytes than the escape, and the loader budgets
        // scalar bytes by input length.
        b'x' => {
            out.push(char::from(u8::try_from(hex(b, i + 1, 2)?).ok()?));
            return Some(i + 3);
        }
        b'u' => {
            let unit = hex(b, i + 1, 4)?;
            if (0xd800..0xdc00).contains(&unit) {
                // A high surrogate must be followed by an escaped low one.
                if b.get(i + 5..i + 7)? != b"\\u" {
                    return None;
                }
                let low = hex(b, i + 7, 4)?;
                if !(0xdc00..0xe000).contains(&low) {
                    return None;
                }
                out.push(char::from_u32(0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00))?);
                return Some(i + 11);
            }
            out.push(char::from_u32(unit)?);
            return Some(i + 5);
        }
        b'U' => {
            out.push(char::from_u32(hex(b, i + 1, 8)?)?);
            return Some(i + 9);
        }
        _ => return None,
    };
    out.push(c);
    Some(i + 1)
}

/// `len` hexadecimal digits at `b[at..]`.
fn hex(b: &[u8], at: usize, len: usize) -> Option<u32> {
    b.get(at..at + len)?
        .iter()
        .try_fold(0u32, |acc, &c| Some(acc * 16 + char::from(c).to_digit(16)?))
}

/// Whether a plain scalar may start with these bytes: not with an
/// indicator, except `-`, `?` and `:` before a non-space.
fn plain_start(b: &[u8]) -> bool {
    match b.first() {
        None => false,
        Some(b'-' | b'?' | b':') => b.get(1).is_some_and(|&c| c != b' '),
        Some(
            b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>' | b'\''
            | b'"' | b'%' | b'@' | b'`' | b' ',
        ) => false,
        Some(_) => true,
    }
}

/// What a plain scalar reads as.
#[derive(Debug, PartialEq)]
enum Scalar {
    Null,
    Bool(bool),
    Number(Number),
    /// The scalar's own text.
    String,
}

/// The type of a plain scalar, as serde-saphyr's untyped path gives it
/// (`deserialize_any` with default options): null words, YAML 1.1 booleans
/// in any letter case, integers (decimal, `0x`, `0o`, `0b`, with `_`
/// separators) that fit `i64`/`u64`, then finite floats; everything else is
/// a string. `None` for non-finite floats, which serde-saphyr rejects.
fn plain_scalar(s: &str) -> Option<Scalar> {
    let b = s.as_bytes();
    match b[0] {
        b'0'..=b'9' | b'.' | b'+' | b'-' => {}
        // The null and boolean words are short and start with one of these.
        b'~' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'y' | b'Y' | b'o' | b'O'
            if b.len() <= 5 =>
        {
            return Some(keyword(s).unwrap_or(Scalar::String));
        }
        _ => return Some(Scalar::String),
    }
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    if !matches!(unsigned.as_bytes().first(), Some(b'0'..=b'9' | b'.')) {
        // Neither number grammar can start otherwise.
        return Some(Scalar::String);
    }
    if let Some(n) = integer(s) {
        return Some(Scalar::Number(n));
    }
    if matches!(unsigned, ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF") {
        return None;
    }
    match s.parse::<f64>() {
        Ok(f) => Number::from_f64(f).map(Scalar::Number),
        Err(_) => Some(Scalar::String),
    }
}

/// The null and boolean words serde-saphyr recognises.
fn keyword(s: &str) -> Option<Scalar> {
    if matches!(s, "~" | "null" | "Null" | "NULL") {
        return Some(Scalar::Null);
    }
    [
        ("true", true),
        ("false", false),
        ("yes", true),
        ("no", false),
        ("on", true),
        ("off", false),
        ("y", true),
        ("n", false),
    ]
    .into_iter()
    .find(|(word, _)| s.eq_ignore_ascii_case(word))
    .map(|(_, value)| Scalar::Bool(value))
}

/// serde-saphyr's integer reading (`parse_int_signed::<i64>` when `s`
/// starts with `-`, else `parse_int_unsigned::<u64>`), without legacy octal.
/// A decimal with a redundant leading zero is not an integer (it then reads
/// as a float).
fn integer(s: &str) -> Option<Number> {
    let (negative, rest) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(d) = rest.strip_prefix("0x").or(rest.strip_prefix("0X")) {
        (16, d)
    } else if let Some(d) = rest.strip_prefix("0o").or(rest.strip_prefix("0O")) {
        (8, d)
    } else if let Some(d) = rest.strip_prefix("0b").or(rest.strip_prefix("0B")) {
        (2, d)
    } else {
        if rest.starts_with('0') && rest != "0" {
            return None;
        }
        (10, rest)
    };
    let magnitude = digits_u128(digits, radix)?;
    if negative {
        let v = i128::try_from(magnitude).ok().map(|m| -m).or_else(|| {
            // i128::MIN has no positive counterpart.
            (magnitude == i128::MAX as u128 + 1).then_some(i128::MIN)
        })?;
        i64::try_from(v).ok().map(Number::from)
    } else {
        u64::try_from(magnitude).ok().map(Number::from)
    }
}

/// Digits of `radix` with single `_` separators between digits, as
/// serde-saphyr accepts them; `None` on anything else or on overflow.
fn digits_u128(digits: &str, radix: u32) -> Option<u128> {
    let b = digits.as_bytes();
    let mut value: u128 = 0;
    let mut seen = false;
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' {
            if i == 0 || b[i - 1] == b'_' || i + 1 == b.len() || b[i + 1] == b'_' {
                return None;
            }
            continue;
        }
        let d = char::from(c).to_digit(radix)?;
        value = value.checked_mul(u128::from(radix))?.checked_add(u128::from(d))?;
        seen = true;
    }
    seen.then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Map, json};

    /// What serde-saphyr makes of `text` with its default options.
    fn saphyr(text: &str) -> Option<Value> {
        serde_saphyr::from_str::<Value>(text).ok()
    }

    /// What serde-saphyr makes of `text` with the budgets the loader sets
    /// (`pieces::yaml_options`): they grow with the input but are tighter
    /// than the defaults for small inputs.
    fn saphyr_as_loaded(text: &str) -> Option<Value> {
        let len = text.len().max(1024);
        let options = serde_saphyr::options! {
            budget: serde_saphyr::budget! {
                max_nodes: len,
                max_events: 4 * len,
                max_total_scalar_bytes: len,
                max_documents: len,
            },
        };
        serde_saphyr::from_str_with_options::<Value>(text, options).ok()
    }

    /// The property every test rests on: a `Some` from [`parse`] is what
    /// serde-saphyr returns, with default options and as the loader calls it.
    fn assert_agrees(text: &str) -> Option<Value> {
        let ours = parse(text);
        if let Some(v) = &ours {
            let differ = format!("block_yaml and serde-saphyr differ on {text:?}");
            assert_eq!(Some(v), saphyr(text).as_ref(), "{differ}");
            assert_eq!(Some(v), saphyr_as_loaded(text).as_ref(), "{differ} (loader's options)");
        }
        ours
    }

    #[test]
    fn subset_parses_to_the_expected_value() {
        let cases: &[(&str, Value)] = &[
            ("a: b\n", json!({"a": "b"})),
            ("a: b", json!({"a": "b"})),
            ("a: b   \n", json!({"a": "b"})),
            ("a:   b\n", json!({"a": "b"})),
            ("kubernetes.io/hostname: node-1\n", json!({"kubernetes.io/hostname": "node-1"})),
            ("app.kubernetes.io/name: x\n", json!({"app.kubernetes.io/name": "x"})),
            ("a:b: c\n", json!({"a:b": "c"})),
            ("a#b: c\n", json!({"a#b": "c"})),
            ("-a: c\n", json!({"-a": "c"})),
            (".dockerconfigjson: x\n", json!({".dockerconfigjson": "x"})),
            ("\"quoted key\": 1\n", json!({"quoted key": 1})),
            ("'it''s': 1\n", json!({"it's": 1})),
            ("\"null\": 1\n'1': 2\n\"\": 3\n", json!({"null": 1, "1": 2, "": 3})),
            ("a:\n  b:\n    c: 1\n  d: 2\ne: 3\n", json!({"a": {"b": {"c": 1}, "d": 2}, "e": 3})),
            ("a:\n    b: 1\n    c: 2\n", json!({"a": {"b": 1, "c": 2}})),
            ("  a: 1\n  b: 2\n", json!({"a": 1, "b": 2})),
            ("a:\nb: 1\n", json!({"a": null, "b": 1})),
            ("a:   \n", json!({"a": null})),
            // Sequences: at the key's column, indented, compact, nested.
            ("a:\n- 1\n- x\nb: 2\n", json!({"a": [1, "x"], "b": 2})),
            ("a:\n  - 1\n  -   2\n", json!({"a": [1, 2]})),
            ("- a: 1\n  b: 2\n- c\n", json!([{"a": 1, "b": 2}, "c"])),
            ("-   a: 1\n    b: 2\n", json!([{"a": 1, "b": 2}])),
            ("- - a\n  - b\n- - c\n", json!([["a", "b"], ["c"]])),
            ("-\n- \n-\n  x: 1\n", json!([null, null, {"x": 1}])),
            ("a:\n-\n b: 1\n", json!({"a": [{"b": 1}]})),
            ("- a:\n  - x\n  b: 1\n- c\n", json!([{"a": ["x"], "b": 1}, "c"])),
            ("- a:\n- b\n", json!([{"a": null}, "b"])),
            ("- 'q': 1\n- 'q'\n", json!([{"q": 1}, "q"])),
            ("- a:b\n- http://x: z\n", json!(["a:b", {"http://x": "z"}])),
            // Empty flow collections.
            ("a: {}\nb: []\nc: {}  \n", json!({"a": {}, "b": [], "c": {}})),
            ("- {}\n- []\n", json!([{}, []])),
            // Plain scalars.
            ("a: x y  z\n", json!({"a": "x y  z"})),
            ("a: x,y [0] {1}\n", json!({"a": "x,y [0] {1}"})),
            ("a: ?x\nb: :x\nc: -x\n", json!({"a": "?x", "b": ":x", "c": "-x"})),
            ("a: x#y\n", json!({"a": "x#y"})),
            (
                "a: x &y *z !t |p >q 'r \"s %t @u `v\n",
                json!({"a": "x &y *z !t |p >q 'r \"s %t @u `v"}),
            ),
            ("a: é日本 😀\n", json!({"a": "é日本 😀"})),
            ("a: \u{a0}x\u{a0}\n", json!({"a": "\u{a0}x\u{a0}"})),
            (
                "a: 31800m\nb: 127Gi\nc: 10.0.1.2\nd: 0b1c2d3e-4f50\n",
                json!({"a": "31800m", "b": "127Gi", "c": "10.0.1.2", "d": "0b1c2d3e-4f50"}),
            ),
            ("a: 2026-01-01T00:00:00Z\n", json!({"a": "2026-01-01T00:00:00Z"})),
            // Quoted scalars.
            ("a: ''\nb: \"\"\n", json!({"a": "", "b": ""})),
            ("a: '  x  '\n", json!({"a": "  x  "})),
            ("a: 'it''s'\nb: ''''\n", json!({"a": "it's", "b": "'"})),
            ("a: 'x: #y \\n'\n", json!({"a": "x: #y \\n"})),
            ("a: \"x: #y\"  \n", json!({"a": "x: #y"})),
            (
                r#"a: "\"\\\/\n\t\r\0\a\b\v\f\e\ \N\_""#,
                json!({"a": "\"\\/\n\t\r\0\x07\x08\x0b\x0c\x1b \u{85}\u{a0}"}),
            ),
            (r#"a: "\x41\xff\u00e9\u00E9\U0001F600\ud83d\ude00""#, json!({"a": "A\u{ff}éé😀😀"})),
            ("a: \"true\"\nb: '1'\nc: \"~\"\n", json!({"a": "true", "b": "1", "c": "~"})),
            // Literal block scalars.
            ("a: |\n  x\n  y\nb: 1\n", json!({"a": "x\ny\n", "b": 1})),
            ("a: |-\n  x\n\nb: 1\n", json!({"a": "x", "b": 1})),
            ("a: |+\n  x\n\n\nb: 1\n", json!({"a": "x\n\n\n", "b": 1})),
            ("a: |\n  x\n\n\nb: 1\n", json!({"a": "x\n", "b": 1})),
            ("a: |  \n  x\n", json!({"a": "x\n"})),
            ("a: |\n  x\n\n  y\n  \n", json!({"a": "x\n\ny\n"})),
            ("a: |-\n\n  \n  x\n", json!({"a": "\n\nx"})),
            ("a: |\n  x  \n    y\n  # z\n", json!({"a": "x  \n  y\n# z\n"})),
            ("a: |+\n  x\n\n# c\n\n", json!({"a": "x\n\n"})),
            ("a: |2-\n    x\n   y\nb: 1\n", json!({"a": "  x\n y", "b": 1})),
            ("a: |-2\n   x\n", json!({"a": " x"})),
            ("a:\n  b: |1\n    x\n", json!({"a": {"b": " x\n"}})),
            ("a:\n- |2-\n   x\n", json!({"a": [" x"]})),
            ("- a: |1\n   x\n", json!([{"a": "x\n"}])),
            ("-   |1\n  x\n", json!([" x\n"])),
            ("- |\n  x\n- y\n", json!(["x\n", true])),
            // Multi-line plain and quoted scalars.
            ("a: b\n c\n", json!({"a": "b c"})),
            ("a: b  \n   c  \nd: 1\n", json!({"a": "b c", "d": 1})),
            ("a: b\n\n  c\n   \n\n  d\n\ne: 1\n", json!({"a": "b\nc\n\nd", "e": 1})),
            ("a: 1\n  2\n", json!({"a": "1 2"})),
            ("a: true\n  x\n", json!({"a": "true x"})),
            ("a:\n  x: b\n   c\n", json!({"a": {"x": "b c"}})),
            ("- b\n c\n- a: b\n   c\n", json!(["b c", {"a": "b c"}])),
            ("a: 'b  \n   c  '\n", json!({"a": "b c  "})),
            ("a: 'b\n\n  c'\n", json!({"a": "b\nc"})),
            ("a: 'b''\n  ''c'\n", json!({"a": "b' 'c"})),
            ("a: 'b\n  # c: d'\n", json!({"a": "b # c: d"})),
            ("a: 'b\n  '\n", json!({"a": "b "})),
            ("a: '\n  b'\n", json!({"a": " b"})),
            ("- 'b\n c'\n", json!(["b c"])),
            ("a: \"b  \n   c  \"\n", json!({"a": "b c  "})),
            ("a: \"b\\ \n c\"\n", json!({"a": "b  c"})),
            ("a: \"b\n  \\ c\"\n", json!({"a": "b  c"})),
            ("a: \"b\\t\n  c\"\n", json!({"a": "b\t c"})),
            ("a: \"b\\\n  c\"\n", json!({"a": "bc"})),
            ("a: \"b \\\n  c\"\n", json!({"a": "b c"})),
            ("a: \"b\\\n\n  c\"\n", json!({"a": "b\nc"})),
            ("a: \"b\n\n  c\"\n", json!({"a": "b\nc"})),
            // Comments on lines of their own.
            ("# lead\na:\n  # mid\n  b: 1\n# tail\n", json!({"a": {"b": 1}})),
            ("a: 1\n# tail", json!({"a": 1})),
            ("a: 1\n  ", json!({"a": 1})),
            ("a:\n# c\n- x\n", json!({"a": ["x"]})),
        ];
        for (text, want) in cases {
            assert_eq!(saphyr(text).as_ref(), Some(want), "test expectation for {text:?}");
            assert_eq!(parse(text).as_ref(), Some(want), "parse({text:?})");
        }
    }

    #[test]
    fn plain_scalars_are_typed_like_serde_saphyr() {
        let cases: &[(&str, Value)] = &[
            ("true", json!(true)),
            ("True", json!(true)),
            ("tRUE", json!(true)),
            ("yes", json!(true)),
            ("Y", json!(true)),
            ("on", json!(true)),
            ("OFF", json!(false)),
            ("n", json!(false)),
            ("No", json!(false)),
            ("false", json!(false)),
            ("null", json!(null)),
            ("Null", json!(null)),
            ("NULL", json!(null)),
            ("~", json!(null)),
            ("nULL", json!("nULL")),
            ("nil", json!("nil")),
            ("0", json!(0)),
            ("-0", json!(0)),
            ("+5", json!(5)),
            ("-5", json!(-5)),
            ("1_000", json!(1000)),
            ("0x1F", json!(31)),
            ("-0x10", json!(-16)),
            ("0o17", json!(15)),
            ("0b101", json!(5)),
            ("18446744073709551615", json!(u64::MAX)),
            ("18446744073709551616", json!(18446744073709551616.0)),
            ("-9223372036854775808", json!(i64::MIN)),
            ("-9223372036854775809", json!(-9223372036854775809.0)),
            ("007", json!(7.0)),
            ("-007", json!(-7.0)),
            ("00", json!(0.0)),
            ("1.5", json!(1.5)),
            (".5", json!(0.5)),
            ("1.", json!(1.0)),
            ("1e3", json!(1000.0)),
            ("+1E3", json!(1000.0)),
            ("-.5", json!(-0.5)),
            ("_1", json!("_1")),
            ("1__0", json!("1__0")),
            ("1_", json!("1_")),
            ("0x", json!("0x")),
            ("0x_1", json!("0x_1")),
            ("1e", json!("1e")),
            ("inf", json!("inf")),
            ("nan", json!("nan")),
            ("Infinity", json!("Infinity")),
            (".", json!(".")),
            (".foo", json!(".foo")),
            ("+", json!("+")),
            ("1:30", json!("1:30")),
            ("2026-01-01", json!("2026-01-01")),
            ("<<", json!("<<")),
        ];
        for (scalar, want) in cases {
            let text = format!("k: {scalar}\n");
            let want = json!({ "k": want });
            assert_eq!(saphyr(&text), Some(want.clone()), "test expectation for {text:?}");
            assert_eq!(parse(&text), Some(want), "parse({text:?})");
        }
    }

    #[test]
    fn constructs_outside_the_subset_are_refused() {
        let nested = |depth: usize| {
            (0..depth).map(|i| format!("{}a:\n", "  ".repeat(i))).collect::<String>()
                + &"  ".repeat(depth)
                + "b: 1\n"
        };
        let cases: Vec<String> = [
            // Not a collection.
            "",
            "\n# only a comment\n",
            "foo\n",
            "'foo'\n",
            // Characters.
            "a:\tb\n",
            "a: b\r\n",
            "\u{feff}a: b\n",
            "a: x\u{1}y\n",
            "a: x\u{7f}y\n",
            "a: x\u{85}y\n",
            "a: x\u{9f}y\n",
            "a: x\u{2028}y\n",
            "a: x\u{fffe}y\n",
            // Anchors, aliases, tags, complex and merge keys, directives,
            // document markers.
            "a: &x 1\n",
            "a: *x\n",
            "a: !!str 1\n",
            "? a\n: b\n",
            "<<: {a: 1}\n",
            "'<<': 1\n",
            "%YAML 1.2\n---\na: 1\n",
            "---\na: 1\n",
            "a: 1\n---\nb: 1\n",
            "a: 1\n...\n",
            // Flow collections with content.
            "a: [a]\n",
            "a: {a: 1}\n",
            "a: { }\n",
            "a: {}x\n",
            // Folded scalars, scalars on the line after their key, and
            // continuation lines that are not plainly text.
            "a: >\n  x\n",
            "a:\n  b\n",
            "-\n  b\n",
            "- a\n  - b\n",
            "a: b\n  'c\n",
            "a: b\n  #c\n",
            "a: b\n  c #d\n",
            "a: b\n  c: d\n",
            "a: b\n  c:\n",
            // Multi-line scalars serde-saphyr rejects (or that end at a
            // less indented line).
            "a: 'b\nc'\n",
            "x:\n  a: 'b\n  c'\n",
            "x:\n  a: \"b\n  c\"\n",
            "- 'b\nc'\n",
            "a: 'b\n\n'\n",
            "a: 'b\n  c' x\n",
            "'a\n b': 1\n",
            "\"a\n b\": 1\n",
            "a: 'b\n",
            "a: 'b\n  ",
            // Comments after content.
            "a: 1 # c\n",
            "a: 'x' # c\n",
            "a: # c\n  b: 1\n",
            "a: | # c\n  x\n",
            // Keys serde-saphyr does not read as strings, duplicates.
            "null: 1\n",
            "~: 1\n",
            "true: 1\n",
            "1: 1\n",
            "a: 1\na: 2\n",
            "a: 1\n'a': 2\n",
            "a : 1\n",
            "\"a\" : 1\n",
            "\"a\":1\n",
            // Errors serde-saphyr reports.
            "a: b: c\n",
            "a: x:\n",
            "a: -\n",
            "a: - b\n",
            "a: @x\n",
            "a: `x\n",
            "a: \"x\"y\n",
            "a: \"\\q\"\n",
            "a: \"\\ud800\"\n",
            "a: \"\\udc00\"\n",
            "a: \"\\ud83d\\u0041\"\n",
            "a: \"\\U00110000\"\n",
            "a: \"\\x4\"\n",
            "a: \"\\L\"\n",
            "a: \"\\P\"\n",
            "a: \"x\n",
            "a:\n  b: 1\n   c: 2\n",
            "a:\n   b: 1\n  c: 2\n",
            "- a: 1\n   b: 2\n",
            "a: 1\n b: 2\n",
            "  a: 1\nb: 2\n",
            "a:\n- b\n  c: 1\n",
            "a: 1\n- b\n",
            "a: |\n    \n  x\n",
            "a: |0\n  x\n",
            "a: |10\n  x\n",
            "a: |x\n",
            "a: .inf\n",
            "a: -.Inf\n",
            "a: .nan\n",
            "a: 1e999\n",
            // Block scalars this reader leaves to serde-saphyr.
            "a: |\nb: 1\n",
            "a: |+\n",
            "a: |\n  x",
            "a: |\n  x\n   \n",
            "a: |",
            &"k".repeat(MAX_KEY_BYTES + 1),
            &format!("{}: 1\n", "k".repeat(MAX_KEY_BYTES + 1)),
            &nested(MAX_DEPTH + 1),
            &format!("a: 1\n{}b: 2\n", "# c\n".repeat(MAX_COMMENT_LINES + 1)),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for text in &cases {
            assert_eq!(parse(text), None, "parse({text:?}) should refuse");
        }
        // Within the limits, the same shapes are read.
        assert!(assert_agrees(&nested(MAX_DEPTH - 1)).is_some());
        let comments = format!("a: 1\n{}b: 2\n", "# c\n".repeat(MAX_COMMENT_LINES));
        assert!(assert_agrees(&comments).is_some());
    }

    /// A node and a pod as `kubectl get -o yaml` prints them (as in
    /// `benches/snapshot_load.rs`), cut out of the list and dedented.
    const NODE: &str = r#"apiVersion: v1
kind: Node
metadata:
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels:
    kubernetes.io/hostname: node-7
    kubernetes.io/os: linux
    node.kubernetes.io/instance-type: c6.8xlarge
    topology.kubernetes.io/zone: zone-1
  name: node-7
  resourceVersion: "1007"
  uid: 0d1c2b3a-0007-4e5f-8a9b-0c1d2e3f4a5b
spec:
  podCIDR: 10.0.7.0/24
  taints:
  - effect: NoSchedule
    key: dedicated
    value: colocation
status:
  allocatable:
    cpu: 31800m
    ephemeral-storage: "95551679124"
    kubernetes.io/batch-cpu: "12000"
    kubernetes.io/batch-memory: "40000000000"
    memory: 127Gi
    pods: "110"
  capacity:
    cpu: "32"
    ephemeral-storage: 100Gi
    memory: 128Gi
    pods: "110"
  conditions:
  - lastHeartbeatTime: "2026-01-01T00:00:00Z"
    lastTransitionTime: "2026-01-01T00:00:00Z"
    message: kubelet is posting ready status
    reason: KubeletReady
    status: "True"
    type: Ready
"#;

    const POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"v1","kind":"Pod","metadata":{"name":"app-7"}}
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels:
    app: app-7
    koordinator.sh/priority-class: koord-batch
    koordinator.sh/qosClass: BE
    pod-template-hash: 5d8f7c
  name: app-7-5d8f7c-7
  namespace: team-7
  ownerReferences:
  - apiVersion: apps/v1
    blockOwnerDeletion: true
    controller: true
    kind: ReplicaSet
    name: app-7-5d8f7c
    uid: 6a1b2c3d-0007-4e5f-8a9b-0c1d2e3f4a5b
  resourceVersion: "100007"
  uid: 7b2c3d4e-00007-4f60-9a0b-1c2d3e4f5a6b
spec:
  containers:
  - args:
    - --config=/etc/app/config.yaml
    - -v=2
    env:
    - name: GOMAXPROCS
      value: "2"
    - name: EMPTY
    image: registry.example.com/app-7:v1.2.3
    imagePullPolicy: IfNotPresent
    name: main
    ports:
    - containerPort: 8080
      protocol: TCP
    resources:
      limits:
        kubernetes.io/batch-cpu: "2000"
        kubernetes.io/batch-memory: 4Gi
      requests:
        kubernetes.io/batch-cpu: "1000"
        kubernetes.io/batch-memory: 2Gi
    securityContext: {}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
    volumeMounts:
    - mountPath: /var/run/secrets/kubernetes.io/serviceaccount
      name: kube-api-access-x7k2p
      readOnly: true
  dnsPolicy: ClusterFirst
  nodeName: node-7
  priority: 5500
  restartPolicy: Always
  schedulerName: kolo-scheduler
  terminationGracePeriodSeconds: 30
  tolerations:
  - effect: NoExecute
    key: node.kubernetes.io/not-ready
    operator: Exists
    tolerationSeconds: 300
status:
  conditions:
  - lastProbeTime: null
    lastTransitionTime: "2026-01-01T00:00:00Z"
    status: "True"
    type: Ready
  hostIP: 10.0.0.7
  phase: Running
  podIP: 10.0.7.9
  qosClass: Burstable
  startTime: "2026-01-01T00:00:00Z"
"#;

    /// A pod exactly as `benches/snapshot_load.rs` generates it, dedented.
    const BENCH_POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels:
    app: app-1
    koordinator.sh/priority-class: koord-prod
    koordinator.sh/qosClass: LS
    pod-template-hash: 5d8f7c
  name: app-1-5d8f7c-1
  namespace: team-1
  ownerReferences:
  - apiVersion: apps/v1
    blockOwnerDeletion: true
    controller: true
    kind: ReplicaSet
    name: app-1-5d8f7c
    uid: 6a1b2c3d-0001-4e5f-8a9b-0c1d2e3f4a5b
  resourceVersion: "100001"
  uid: 7b2c3d4e-00001-4f60-9a0b-1c2d3e4f5a6b
spec:
  containers:
  - image: registry.example.com/app-1:v1.2.3
    imagePullPolicy: IfNotPresent
    name: main
    ports:
    - containerPort: 8080
      protocol: TCP
    resources:
      limits:
        cpu: "2"
        memory: 4Gi
      requests:
        cpu: 500m
        memory: 1Gi
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
  dnsPolicy: ClusterFirst
  nodeName: node-1
  priority: 9500
  restartPolicy: Always
  schedulerName: kolo-scheduler
  terminationGracePeriodSeconds: 30
  tolerations:
  - effect: NoExecute
    key: node.kubernetes.io/not-ready
    operator: Exists
    tolerationSeconds: 300
status:
  hostIP: 10.0.0.1
  phase: Running
  podIP: 10.0.1.3
  qosClass: Burstable
  startTime: "2026-01-01T00:00:00Z"
"#;

    #[test]
    fn kubectl_objects_take_the_fast_path() {
        let fixtures = [
            NODE,
            POD,
            BENCH_POD,
            include_str!(
                "../../../kolo-api/tests/fixtures/clustercolocationprofile-colocation-profile-example.yaml"
            ),
            include_str!("../../../kolo-api/tests/fixtures/device-node-1.yaml"),
            include_str!("../../../kolo-api/tests/fixtures/elasticquota-team-a.yaml"),
            include_str!("../../../kolo-api/tests/fixtures/nodemetric-master-01.yaml"),
            include_str!("../../../kolo-api/tests/fixtures/nodeslo-node-1.yaml"),
            include_str!("../../../kolo-api/tests/fixtures/podgroup-gang-a.yaml"),
            include_str!("../../../kolo-api/tests/fixtures/podmigrationjob-migrate-demo.yaml"),
            include_str!("../../../kolo-api/tests/fixtures/reservation-reservation-demo.yaml"),
        ];
        for text in fixtures {
            let head: String = text.chars().take(60).collect();
            assert!(assert_agrees(text).is_some(), "refused a kubectl object: {head:?}");
        }
    }

    /// Fragments that make scalars interesting: indicators, things that look
    /// like numbers, booleans or nulls, quotes, escapes, line breaks, and
    /// characters YAML treats specially.
    const FRAGMENTS: &[&str] = &[
        "a", "Z", "0", "1", "7", "9", "x", "e", "E", ".", "_", "+", "-", " ", "  ", ":", ": ", "#",
        " #", "'", "\"", "\\", "\n", "\t", "\r", "é", "日", "😀", "\u{a0}", "\u{85}", "\u{2028}",
        "\u{feff}", "\u{1}", "\u{7f}", "{", "}", "[", "]", "{}", "[]", ",", "&", "*", "!", "|",
        ">", "%", "@", "`", "?", "~", "null", "Null", "true", "yes", "No", "on", "y", "0x1F",
        "0o7", "0b1", "1e3", ".5", "007", ".inf", ".NaN", "1_0", "---", "...", "- ", "<<", "\\n",
        "\\x41", "\\u00e9", "''", "|-", "|+", "|2",
    ];

    fn tricky_string() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(FRAGMENTS), 0..6).prop_map(|v| v.concat())
    }

    fn tricky_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            1 => Just(Value::Null),
            1 => any::<bool>().prop_map(Value::Bool),
            1 => any::<i64>().prop_map(Value::from),
            1 => any::<u64>().prop_map(Value::from),
            1 => (-1e6f64..1e6).prop_map(Value::from),
            4 => tricky_string().prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(tricky_string(), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// How [`emit`] lays a document out; varied so the reader meets more than
    /// one style.
    #[derive(Debug, Clone)]
    struct Layout {
        /// Spaces per nesting level.
        indent: usize,
        /// Whether a sequence under a key sits at the key's column
        /// (kubectl) or one level deeper.
        sequence_at_key: bool,
        /// Spaces after `- `.
        extra_entry_spaces: usize,
        /// Prefer single quotes over double quotes where both work.
        single_quotes: bool,
        /// Use literal block scalars for multi-line strings.
        literal_blocks: bool,
        /// Break flow scalars at a single space once a line is this long,
        /// as go-yaml does at 80 columns.
        wrap: Option<usize>,
    }

    fn layout() -> impl Strategy<Value = Layout> {
        (
            1usize..5,
            any::<bool>(),
            0usize..2,
            any::<bool>(),
            any::<bool>(),
            prop::option::of(0usize..12),
        )
            .prop_map(
                |(
                    indent,
                    sequence_at_key,
                    extra_entry_spaces,
                    single_quotes,
                    literal_blocks,
                    wrap,
                )| {
                    Layout {
                        indent,
                        sequence_at_key,
                        extra_entry_spaces,
                        single_quotes,
                        literal_blocks,
                        wrap,
                    }
                },
            )
    }

    /// A go-yaml-like printer, written independently of the reader: it need
    /// not be faithful (the property compares with serde-saphyr, not with the
    /// value printed), only plausible enough that both readers accept most
    /// of what it prints.
    fn emit(value: &Value, layout: &Layout) -> String {
        let mut out = String::new();
        match value {
            Value::Object(m) if !m.is_empty() => emit_map(m, 0, layout, &mut out),
            Value::Array(a) if !a.is_empty() => emit_seq(a, 0, layout, &mut out),
            other => {
                out.push_str("v: ");
                emit_inline(other, 0, layout, &mut out);
            }
        }
        out
    }

    fn emit_map(m: &Map<String, Value>, col: usize, l: &Layout, out: &mut String) {
        for (i, (k, v)) in m.iter().enumerate() {
            if i > 0 {
                out.push_str(&" ".repeat(col));
            }
            out.push_str(&flow_scalar_text(k, col, l));
            out.push(':');
            match v {
                Value::Object(m) if !m.is_empty() => {
                    out.push('\n');
                    out.push_str(&" ".repeat(col + l.indent));
                    emit_map(m, col + l.indent, l, out);
                }
                Value::Array(a) if !a.is_empty() => {
                    out.push('\n');
                    let at = if l.sequence_at_key { col } else { col + l.indent };
                    out.push_str(&" ".repeat(at));
                    emit_seq(a, at, l, out);
                }
                other => {
                    out.push(' ');
                    emit_inline(other, col, l, out);
                }
            }
        }
    }

    fn emit_seq(a: &[Value], col: usize, l: &Layout, out: &mut String) {
        let at = col + 2 + l.extra_entry_spaces;
        for (i, v) in a.iter().enumerate() {
            if i > 0 {
                out.push_str(&" ".repeat(col));
            }
            out.push('-');
            out.push_str(&" ".repeat(1 + l.extra_entry_spaces));
            match v {
                Value::Object(m) if !m.is_empty() => emit_map(m, at, l, out),
                Value::Array(a) if !a.is_empty() => emit_seq(a, at, l, out),
                other => emit_inline(other, col, l, out),
            }
        }
    }

    fn emit_inline(v: &Value, col: usize, l: &Layout, out: &mut String) {
        match v {
            Value::Object(_) => out.push_str("{}"),
            Value::Array(_) => out.push_str("[]"),
            Value::String(s) => out.push_str(&scalar_text(s, col, l)),
            other => out.push_str(&other.to_string()),
        }
        out.push('\n');
    }

    /// A string as go-yaml would roughly print it: plain when it obviously
    /// reads back as itself, a literal block when multi-line, quoted
    /// otherwise.
    fn scalar_text(s: &str, col: usize, l: &Layout) -> String {
        let text = flow_scalar_text(s, col, l);
        match l.wrap {
            Some(width) if !text.starts_with('|') => {
                let pad = format!("\n{}", " ".repeat(col + l.indent));
                let chars: Vec<char> = text.chars().collect();
                let mut out = String::new();
                let mut line = 0;
                for (i, &c) in chars.iter().enumerate() {
                    let single_space = c == ' '
                        && i > 0
                        && chars[i - 1] != ' '
                        && chars.get(i + 1).is_some_and(|&n| n != ' ');
                    if single_space && line > width {
                        out.push_str(&pad);
                        line = 0;
                    } else {
                        out.push(c);
                        line += 1;
                    }
                }
                out
            }
            _ => text,
        }
    }

    fn flow_scalar_text(s: &str, col: usize, l: &Layout) -> String {
        let looks_typed = s.is_empty()
            || s.starts_with(|c: char| c.is_ascii_digit() || "+-.~".contains(c))
            || ["null", "true", "false", "yes", "no", "on", "off", "y", "n"]
                .iter()
                .any(|w| s.eq_ignore_ascii_case(w));
        let plain = !looks_typed
            && s.chars().all(|c| c.is_alphanumeric() || " ./-_".contains(c))
            && !s.starts_with(' ')
            && !s.ends_with(' ');
        if plain {
            return s.to_string();
        }
        if l.literal_blocks && s.contains('\n') && !s.contains(['\t', '\r']) {
            let body = s.strip_suffix('\n').unwrap_or(s);
            let chomp = if s.ends_with("\n\n") {
                "+"
            } else if s.ends_with('\n') {
                ""
            } else {
                "-"
            };
            let indicator =
                if s.starts_with([' ', '\n']) { l.indent.to_string() } else { String::new() };
            let pad = " ".repeat(col + l.indent);
            let mut out = format!("|{indicator}{chomp}\n");
            for line in body.split('\n') {
                if !line.is_empty() {
                    out.push_str(&pad);
                }
                out.push_str(line);
                out.push('\n');
            }
            out.pop();
            return out;
        }
        if l.single_quotes && !s.contains(['\n', '\t', '\r', '\\']) {
            return format!("'{}'", s.replace('\'', "''"));
        }
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() || c == '\u{feff}' => {
                    out.push_str(&format!("\\u{:04x}", c as u32))
                }
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    /// Lines of YAML-ish text: an indentation, maybe a `- `, maybe a key,
    /// maybe a value, each drawn from pieces both valid and not, to hit the
    /// refusal paths and the odd corners of indentation handling.
    fn yamlish_text() -> impl Strategy<Value = String> {
        let line = (
            prop::sample::select(&[0usize, 0, 1, 2, 2, 3, 4, 6][..]),
            prop::sample::select(&["", "", "- ", "-  ", "- - ", "-"][..]),
            prop::sample::select(LINE_KEYS),
            prop::sample::select(LINE_VALUES),
        )
            .prop_map(|(indent, dash, key, value)| {
                format!("{}{dash}{key}{value}\n", " ".repeat(indent))
            });
        (prop::collection::vec(line, 1..10), any::<bool>()).prop_map(|(lines, cut)| {
            let text = lines.concat();
            // Sometimes without the final line break.
            if cut { text[..text.len() - 1].to_string() } else { text }
        })
    }

    const LINE_KEYS: &[&str] = &[
        "", "a: ", "b: ", "a:", "k.io/x: ", "'q': ", "\"q\": ", "'': ", "1: ", "a : ", "a:  ",
        "? ", "<<: ", "a#b: ", "-a: ",
    ];

    const LINE_VALUES: &[&str] = &[
        "", "", "x", "1", "-1", "0x1", "1.5", "007", "true", "No", "null", "~", "y", "x y", "x:y",
        "x: y", "x #y", "x#y", "'q'", "'a''b'", "\"q\"", "\"\\n\"", "\"\\x\"", "{}", "[]",
        "{a: 1}", "|", "|-", "|+", "|2", "|1-", ">", "# c", " # c", "&a x", "*a", "!t x", "  ",
        "é", "\u{a0}", "---", "...", "%x", "@x", "-", "- x",
    ];

    proptest! {
        // PROPTEST_CASES can raise the count for a longer hunt.
        #![proptest_config(ProptestConfig {
            cases: ProptestConfig::default().cases.max(2000),
            ..ProptestConfig::default()
        })]

        #[test]
        fn plain_scalar_typing_matches(s in "[-+._0-9a-fA-FxXoObBeEinIN~ ]{1,12}") {
            assert_agrees(&format!("k: {s}\n"));
            assert_agrees(&format!("{s}: v\n"));
            assert_agrees(&format!("- {s}\n"));
        }

        #[test]
        fn serde_saphyr_output_agrees(v in tricky_value()) {
            let text = serde_saphyr::to_string(&v).unwrap();
            assert_agrees(&text);
        }

        #[test]
        fn kubectl_like_output_agrees(v in tricky_value(), l in layout()) {
            assert_agrees(&emit(&v, &l));
        }

        #[test]
        fn kubectl_like_output_of_plain_values_is_read(
            v in tricky_value(),
            l in layout(),
        ) {
            // Strings of letters only: nothing the reader has reason to
            // refuse, so it must take the fast path.
            fn tame(v: &Value) -> Value {
                match v {
                    Value::String(s) => {
                        let t: String = s.chars().filter(|c| c.is_ascii_alphabetic()).collect();
                        Value::String(format!("s{t}"))
                    }
                    Value::Array(a) => Value::Array(a.iter().map(tame).collect()),
                    Value::Object(m) => Value::Object(
                        m.iter().map(|(k, v)| (format!("k{}", k.len()), tame(v))).collect(),
                    ),
                    other => other.clone(),
                }
            }
            let text = emit(&tame(&v), &l);
            prop_assert!(assert_agrees(&text).is_some(), "refused {:?}", text);
        }

        #[test]
        fn yamlish_text_agrees(text in yamlish_text()) {
            assert_agrees(&text);
        }
    }
}
