// SPDX-License-Identifier: GPL-2.0-only
//! A minimal JSON object writer: the tools print one flat object with a few arrays, and the
//! crate carries no JSON dependency. Strings come from the user (`--name`), so escaping is
//! complete per RFC 8259, not just quotes.

use std::fmt::Write;

/// Builds one JSON object, keys in insertion order.
pub(crate) struct Object {
    buf: String,
}

impl Object {
    pub(crate) fn new() -> Object {
        Object {
            buf: String::from("{"),
        }
    }

    fn key(&mut self, k: &str) {
        if self.buf.len() > 1 {
            self.buf.push(',');
        }
        escape_into(&mut self.buf, k);
        self.buf.push(':');
    }

    pub(crate) fn u64(mut self, k: &str, v: u64) -> Object {
        self.key(k);
        let _ = write!(self.buf, "{v}");
        self
    }

    pub(crate) fn i64(mut self, k: &str, v: i64) -> Object {
        self.key(k);
        let _ = write!(self.buf, "{v}");
        self
    }

    /// JSON has no NaN or infinity; `null` is the only honest spelling.
    pub(crate) fn f64(mut self, k: &str, v: f64) -> Object {
        self.key(k);
        if v.is_finite() {
            let _ = write!(self.buf, "{v}");
        } else {
            self.buf.push_str("null");
        }
        self
    }

    pub(crate) fn bool(mut self, k: &str, v: bool) -> Object {
        self.key(k);
        self.buf.push_str(if v { "true" } else { "false" });
        self
    }

    pub(crate) fn str(mut self, k: &str, v: &str) -> Object {
        self.key(k);
        escape_into(&mut self.buf, v);
        self
    }

    pub(crate) fn opt_str(self, k: &str, v: Option<&str>) -> Object {
        match v {
            Some(s) => self.str(k, s),
            None => self.raw(k, "null"),
        }
    }

    pub(crate) fn opt_u64(self, k: &str, v: Option<u64>) -> Object {
        match v {
            Some(n) => self.u64(k, n),
            None => self.raw(k, "null"),
        }
    }

    pub(crate) fn opt_i64(self, k: &str, v: Option<i64>) -> Object {
        match v {
            Some(n) => self.i64(k, n),
            None => self.raw(k, "null"),
        }
    }

    /// `v` must already be valid JSON (a nested object or array built here).
    pub(crate) fn raw(mut self, k: &str, v: &str) -> Object {
        self.key(k);
        self.buf.push_str(v);
        self
    }

    pub(crate) fn finish(mut self) -> String {
        self.buf.push('}');
        self.buf
    }
}

/// Joins already-encoded JSON values into an array.
pub(crate) fn array<I: IntoIterator<Item = String>>(items: I) -> String {
    let mut out = String::from("[");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&item);
    }
    out.push(']');
    out
}

/// Appends `s` as a quoted JSON string.
pub(crate) fn escape_into(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> String {
        let mut out = String::new();
        escape_into(&mut out, s);
        out
    }

    #[test]
    fn escapes_quotes_backslashes_and_controls() {
        assert_eq!(esc(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(esc("l1\nl2\t\r"), r#""l1\nl2\t\r""#);
        assert_eq!(esc("\u{1}\u{1f}\u{8}\u{c}"), r#""\u0001\u001f\b\f""#);
        // Non-ASCII passes through: JSON text is UTF-8.
        assert_eq!(esc("pändé"), "\"pändé\"");
    }

    #[test]
    fn object_separates_fields_and_spells_null() {
        let s = Object::new()
            .u64("a", 1)
            .i64("b", -2)
            .f64("c", 0.25)
            .f64("nan", f64::NAN)
            .bool("d", true)
            .opt_str("e", None)
            .opt_u64("f", Some(7))
            .raw("g", &array(["1".to_string(), "2".to_string()]))
            .finish();
        assert_eq!(
            s,
            r#"{"a":1,"b":-2,"c":0.25,"nan":null,"d":true,"e":null,"f":7,"g":[1,2]}"#
        );
        assert_eq!(Object::new().finish(), "{}");
        assert_eq!(array(Vec::new()), "[]");
    }
}
