//! A subject template, `orders.{region}.{id}`: literal text and `{name}` tokens, each token's
//! values given by a `--token name=…` ([`NamedToken`]). Per message every token is drawn once
//! (a token used twice shows one value twice) and the subject is the pieces side by side,
//! handed to the encoder as slices: nothing is allocated per message.
//!
//! Subscribers listen on the template's wildcard: each dot-separated token of the subject that
//! holds a `{…}` becomes `*` (`orders.*.*`), which every drawn subject matches, since no value
//! holds a dot and none is empty.

use std::fmt;

use serde::{Serialize, Serializer};

use super::token::{Token, TokenDist, Value};
use super::Gen;

/// Distinct tokens a template may name.
pub const MAX_TOKENS: usize = 8;
/// Pieces (literal runs and token uses) a template may have.
pub const MAX_PIECES: usize = 24;
/// Subjects up to this long are written into one buffer on the stack.
pub const SHORT: usize = 256;

/// `--token name=values`.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedToken {
    pub name: String,
    pub dist: TokenDist,
}

impl NamedToken {
    /// Parses `--token`.
    ///
    /// # Errors
    /// A missing `=`, a bad name, or values [`TokenDist::parse`] refuses.
    pub fn parse(s: &str) -> Result<Self, String> {
        let (name, values) = s
            .split_once('=')
            .ok_or_else(|| format!("'{s}' is not NAME=VALUES, such as region=us,eu,ap"))?;
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!(
                "the token name '{name}' must be letters, digits or _"
            ));
        }
        let dist = TokenDist::parse(values).map_err(|why| format!("token {name}: {why}"))?;
        Ok(Self {
            name: name.to_string(),
            dist,
        })
    }
}

impl fmt::Display for NamedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.name, self.dist)
    }
}

/// A plan lists tokens as the flag's values.
impl Serialize for NamedToken {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// What is wrong with a template: the subject's fault, or token `token`'s (its index in the
/// `--token`s given).
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub token: Option<usize>,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Lit(Vec<u8>),
    /// The token at this index of the template's list.
    Tok(usize),
}

/// A subject template with its tokens' samplers, built before the clock starts.
#[derive(Debug, Clone)]
pub struct Template {
    text: String,
    pieces: Vec<Piece>,
    tokens: Vec<Token>,
    /// The longest subject it can draw, in bytes.
    longest: usize,
}

impl Template {
    /// Whether a subject is a template (names a token).
    pub fn is_template(subject: &str) -> bool {
        subject.contains('{') || subject.contains('}')
    }

    /// The template `subject` with the values `tokens` give.
    ///
    /// # Errors
    /// A token with no `--token`, a malformed brace, or too many tokens or pieces (the
    /// subject's fault); a `--token` the subject does not use or given twice, or whose values
    /// name no count (that token's: [`Fault::token`] says which).
    pub fn build(subject: &str, tokens: &[NamedToken]) -> Result<Self, Fault> {
        let at = |i: usize| {
            move |why: String| Fault {
                token: Some(i),
                why,
            }
        };
        for (i, t) in tokens.iter().enumerate() {
            if tokens[..i].iter().any(|o| o.name == t.name) {
                return Err(at(i)(format!("{} is given twice", t.name)));
            }
        }
        let pieces = pieces(subject, tokens).map_err(|why| Fault { token: None, why })?;
        if let Some(i) = (0..tokens.len()).find(|i| !pieces.contains(&Piece::Tok(*i))) {
            return Err(at(i)(format!(
                "the subject '{subject}' has no {{{}}}",
                tokens[i].name
            )));
        }
        if tokens.len() > MAX_TOKENS || pieces.len() > MAX_PIECES {
            return Err(Fault {
                token: None,
                why: format!("at most {MAX_TOKENS} tokens and {MAX_PIECES} pieces in a subject"),
            });
        }
        let mut built = Vec::with_capacity(tokens.len());
        for (i, t) in tokens.iter().enumerate() {
            if !t.dist.names_count() {
                return Err(at(i)(format!(
                    "'{}' needs its count of values in a subject: add :N",
                    t.dist
                )));
            }
            built.push(t.dist.build(None).map_err(at(i))?);
        }
        let longest = pieces
            .iter()
            .map(|p| match p {
                Piece::Lit(b) => b.len(),
                Piece::Tok(i) => built[*i].longest(),
            })
            .sum();
        Ok(Self {
            text: subject.to_string(),
            pieces,
            tokens: built,
            longest,
        })
    }

    /// The template as typed.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// What subscribers listen on: each subject token that holds a template token is `*`.
    pub fn wildcard(&self) -> String {
        self.literal(|| "*")
    }

    /// A subject the template could give, every template token an `x`: what is checked as a
    /// publish subject.
    pub fn example(&self) -> String {
        self.literal(|| "x")
    }

    /// The template with each subject token that holds a template token replaced by `with()`,
    /// and each template token elsewhere (inside literal text) dropped.
    fn literal(&self, with: impl Fn() -> &'static str) -> String {
        let mut out: Vec<String> = vec![String::new()];
        let mut templated = vec![false];
        for p in &self.pieces {
            match p {
                Piece::Tok(_) => *templated.last_mut().expect("never empty") = true,
                Piece::Lit(b) => {
                    let text = String::from_utf8_lossy(b);
                    let mut parts = text.split('.');
                    if let Some(first) = parts.next() {
                        out.last_mut().expect("never empty").push_str(first);
                    }
                    for part in parts {
                        out.push(part.to_string());
                        templated.push(false);
                    }
                }
            }
        }
        (out.into_iter().zip(templated))
            .map(|(t, tpl)| if tpl { with().to_string() } else { t })
            .collect::<Vec<_>>()
            .join(".")
    }

    /// Draws message `g`'s subject and calls `f` with its pieces, in order: one piece, written
    /// into a buffer on the stack, when every subject the template draws fits in
    /// [`SHORT`] bytes (the common case, and the cheaper: no arrays of pieces to fill).
    #[inline]
    pub fn with_subject<R>(&self, g: &mut Gen, f: impl FnOnce(&[&[u8]]) -> R) -> R {
        let mut values = [Value::Number(0); MAX_TOKENS];
        for (v, t) in values.iter_mut().zip(&self.tokens) {
            *v = t.draw(g);
        }
        if self.longest <= SHORT {
            let mut buf = [0u8; SHORT];
            let mut n = 0;
            let mut put = |b: &[u8]| {
                buf[n..n + b.len()].copy_from_slice(b);
                n += b.len();
            };
            for p in &self.pieces {
                match p {
                    Piece::Lit(b) => put(b),
                    Piece::Tok(i) => match values[*i] {
                        Value::Word(w) => put(w),
                        Value::Number(v) => put(itoa::Buffer::new().format(v).as_bytes()),
                    },
                }
            }
            return f(&[&buf[..n]]);
        }
        let mut nums = [itoa::Buffer::new(); MAX_TOKENS];
        let mut text: [&[u8]; MAX_TOKENS] = [b""; MAX_TOKENS];
        for ((slot, buf), v) in text.iter_mut().zip(nums.iter_mut()).zip(values) {
            *slot = match v {
                Value::Word(w) => w,
                Value::Number(n) => buf.format(n).as_bytes(),
            };
        }
        let mut parts: [&[u8]; MAX_PIECES] = [b""; MAX_PIECES];
        for (slot, p) in parts.iter_mut().zip(&self.pieces) {
            *slot = match p {
                Piece::Lit(b) => b,
                Piece::Tok(i) => text[*i],
            };
        }
        f(&parts[..self.pieces.len()])
    }
}

/// The pieces of `subject`: literal runs and uses of `tokens`, by index.
fn pieces(subject: &str, tokens: &[NamedToken]) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut rest = subject;
    while let Some(open) = rest.find('{') {
        if rest[..open].contains('}') {
            return Err("a '}' without its '{'".into());
        }
        if open > 0 {
            pieces.push(Piece::Lit(rest.as_bytes()[..open].to_vec()));
        }
        let close = rest[open..].find('}').ok_or("a '{' without its '}'")? + open;
        let name = &rest[open + 1..close];
        if name.contains('{') {
            return Err("a '{' inside a token's braces".into());
        }
        let at = tokens.iter().position(|t| t.name == name).ok_or_else(|| {
            format!("the token {{{name}}} has no values: give --token {name}=VALUES")
        })?;
        pieces.push(Piece::Tok(at));
        rest = &rest[close + 1..];
    }
    if rest.contains('}') {
        return Err("a '}' without its '{'".into());
    }
    if !rest.is_empty() {
        pieces.push(Piece::Lit(rest.as_bytes().to_vec()));
    }
    Ok(pieces)
}
