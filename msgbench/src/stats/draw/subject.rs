//! A subject template, `orders.{region}.{id}`: literal text and `{name}` tokens, each token's
//! values given by a `--token name=…` ([`NamedToken`]). Per message every token is drawn once
//! (a token used twice shows one value twice) and the subject is the pieces side by side,
//! written straight into the outgoing buffer: nothing is allocated per message.
//!
//! Subscribers listen on the template's wildcard: each dot-separated token of the subject that
//! holds a `{…}` becomes `*` (`orders.*.*`), which every drawn subject matches since no value
//! contains a dot.

use std::fmt;

use serde::{Serialize, Serializer};

use super::token::{Token, TokenDist, Value};
use super::Gen;

/// Distinct tokens a template may name.
pub const MAX_TOKENS: usize = 8;
/// Pieces (literal runs and token uses) a template may have.
pub const MAX_PIECES: usize = 24;

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
            return Err(format!("token name '{name}' must be letters, digits or _"));
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
}

impl Template {
    /// Whether a subject is a template (names a token).
    pub fn is_template(subject: &str) -> bool {
        subject.contains('{') || subject.contains('}')
    }

    /// The template `subject` with the values `tokens` give; `floor` is not used here.
    ///
    /// # Errors
    /// A token with no `--token`, a `--token` the subject does not use, or a malformed brace.
    pub fn build(subject: &str, tokens: &[NamedToken]) -> Result<Self, String> {
        let mut pieces = Vec::new();
        let mut used = vec![false; tokens.len()];
        let mut rest = subject;
        while let Some(open) = rest.find('{') {
            if rest[..open].contains('}') {
                return Err("a '}' without its '{'".into());
            }
            if open > 0 {
                pieces.push(Piece::Lit(rest[..open].as_bytes().to_vec()));
            }
            let close = rest[open..].find('}').ok_or("a '{' without its '}'")? + open;
            let name = &rest[open + 1..close];
            let at = tokens.iter().position(|t| t.name == name).ok_or_else(|| {
                format!("the token {{{name}}} has no values: give --token {name}=…")
            })?;
            used[at] = true;
            pieces.push(Piece::Tok(at));
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err("a '}' without its '{'".into());
        }
        if !rest.is_empty() {
            pieces.push(Piece::Lit(rest.as_bytes().to_vec()));
        }
        if let Some(i) = used.iter().position(|u| !u) {
            return Err(format!(
                "--token {}: the subject has no {{{}}}",
                tokens[i].name, tokens[i].name
            ));
        }
        if tokens.len() > MAX_TOKENS || pieces.len() > MAX_PIECES {
            return Err(format!(
                "at most {MAX_TOKENS} tokens and {MAX_PIECES} pieces in a subject"
            ));
        }
        let tokens = tokens
            .iter()
            .map(|t| {
                if !t.dist.names_count() {
                    return Err(format!(
                        "token {}: '{}' needs its count of values here: add :N",
                        t.name, t.dist
                    ));
                }
                t.dist
                    .build(None)
                    .map_err(|why| format!("token {}: {why}", t.name))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            text: subject.to_string(),
            pieces,
            tokens,
        })
    }

    /// The template as typed.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// What subscribers listen on: each subject token that holds a template token is `*`.
    pub fn wildcard(&self) -> String {
        self.split_map(|_| "*")
    }

    /// A subject the template could give, every token a plain `x`: what is checked as a publish
    /// subject.
    pub fn example(&self) -> String {
        self.split_map(|t| t)
    }

    fn split_map(&self, templated: impl Fn(&str) -> &str) -> String {
        let mut plain = String::new();
        for p in &self.pieces {
            match p {
                Piece::Lit(b) => plain.push_str(std::str::from_utf8(b).unwrap_or("")),
                Piece::Tok(_) => plain.push('\u{1}'),
            }
        }
        plain
            .split('.')
            .map(|t| {
                if t.contains('\u{1}') {
                    templated(&t.replace('\u{1}', "x")).to_string()
                } else {
                    t.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(".")
    }

    /// Draws message `g`'s subject and calls `f` with its pieces, in order.
    #[inline]
    pub fn with_subject<R>(&self, g: &mut Gen, f: impl FnOnce(&[&[u8]]) -> R) -> R {
        let mut values = [Value::Number(0); MAX_TOKENS];
        for (v, t) in values.iter_mut().zip(&self.tokens) {
            *v = t.draw(g);
        }
        let mut nums: [itoa::Buffer; MAX_TOKENS] = [itoa::Buffer::new(); MAX_TOKENS];
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
