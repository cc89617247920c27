//! Each verb's formatting of one argument, as Go's `fmt` prints it: the
//! flags of one verb ([`Flags`]), padding to a width in runes, strings
//! (`%s %q %x %v`), integers (`%d %b %o %x %c %q %U`), floats (through
//! `float`), `*big.Int`s and the in-band errors of a bad verb
//! (`%!d(string=x)`). Reading the format (flags, widths, precisions,
//! argument indexes) is `verbs`'; how an argument became a Go value is the
//! parent's (`convert`).

use std::fmt::Write as _;

use super::float::{binary_float, format_float, hex_float, sharp_float};
use super::quote::{is_print, quote, quote_char};
use super::{Arg, Out, Unsure};

/// Go's `fmt` flags of one verb.
#[derive(Default, Clone, Copy)]
pub(super) struct Flags {
    pub(super) wid: Option<usize>,
    pub(super) prec: Option<usize>,
    pub(super) minus: bool,
    pub(super) plus: bool,
    pub(super) sharp: bool,
    pub(super) space: bool,
    pub(super) zero: bool,
    pub(super) plus_v: bool,
    pub(super) sharp_v: bool,
}

/// The text written so far and the current verb's flags.
pub(super) struct Printer {
    pub(super) out: String,
    pub(super) f: Flags,
}

impl Printer {
    fn padding(&mut self, n: usize) {
        let c = if self.f.zero && !self.f.minus {
            '0'
        } else {
            ' '
        };
        self.out.extend(std::iter::repeat_n(c, n));
    }

    /// Go's `fmt.pad`/`padString`: widths count runes.
    fn pad(&mut self, s: &str) {
        let Some(w) = self.f.wid.filter(|w| *w > 0) else {
            self.out.push_str(s);
            return;
        };
        let n = w.saturating_sub(s.chars().count());
        if self.f.minus {
            self.out.push_str(s);
            self.padding(n);
        } else {
            self.padding(n);
            self.out.push_str(s);
        }
    }

    fn truncate<'a>(&self, s: &'a str) -> &'a str {
        match self.f.prec {
            Some(p) => match s.char_indices().nth(p) {
                Some((i, _)) => &s[..i],
                None => s,
            },
            None => s,
        }
    }

    fn bad_verb(&mut self, verb: char, arg: &Arg) -> Out<()> {
        self.out.push_str("%!");
        self.out.push(verb);
        self.out.push('(');
        self.out.push_str(arg.type_name());
        self.out.push('=');
        // Go prints the argument with `%v` and the verb's flags, as
        // plain flags (not `%+v`/`%#v`).
        match arg {
            Arg::Str(s) => {
                let s = self.truncate(s).to_string();
                self.pad(&s);
            }
            Arg::Int(i) => self.integer(*i, 'v')?,
            Arg::Float(x) => self.float(*x, 'g', None)?,
            Arg::Big(..) => return Err(Unsure("a big integer in a bad verb")),
        }
        self.out.push(')');
        Ok(())
    }

    pub(super) fn print_arg(&mut self, arg: &Arg, verb: char) -> Out<()> {
        match verb {
            'T' => {
                let t = self.truncate(arg.type_name()).to_string();
                self.pad(&t);
                return Ok(());
            }
            'p' => {
                if let Arg::Big(..) = arg {
                    return Err(Unsure("%p of a big integer"));
                }
                return self.bad_verb(verb, arg);
            }
            _ => {}
        }
        match arg {
            Arg::Str(s) => self.string(s, verb, arg),
            Arg::Int(i) => match verb {
                'v' | 'd' | 'b' | 'o' | 'x' | 'X' => self.integer(*i, verb),
                'O' | 'c' | 'q' | 'U' => self.rune(*i, verb),
                _ => self.bad_verb(verb, arg),
            },
            Arg::Float(x) => match verb {
                'v' => self.float(*x, 'g', None),
                'g' | 'G' => self.float(*x, verb, None),
                'e' | 'E' | 'f' => self.float(*x, verb, Some(6)),
                'F' => self.float(*x, 'f', Some(6)),
                'b' | 'x' | 'X' => self.float(*x, verb, None),
                _ => self.bad_verb(verb, arg),
            },
            Arg::Big(neg, digits) => self.big(*neg, digits, verb),
        }
    }

    fn string(&mut self, s: &str, verb: char, arg: &Arg) -> Out<()> {
        match verb {
            'v' if self.f.sharp_v => self.quoted(s),
            'v' | 's' => {
                let t = self.truncate(s).to_string();
                self.pad(&t);
                Ok(())
            }
            'x' | 'X' => {
                self.hex_string(s, verb == 'X');
                Ok(())
            }
            'q' => self.quoted(s),
            _ => self.bad_verb(verb, arg),
        }
    }

    /// Go's `fmtQ`.
    fn quoted(&mut self, s: &str) -> Out<()> {
        let s = self.truncate(s).to_string();
        let backquote = self.f.sharp
            && !s
                .chars()
                .any(|c| c == '`' || c == '\u{feff}' || (c.is_control() && c != '\t'));
        let mut q = String::with_capacity(s.len() + 2);
        if backquote {
            q.push('`');
            q.push_str(&s);
            q.push('`');
        } else {
            quote(&mut q, &s, self.f.plus)?;
        }
        self.pad(&q);
        Ok(())
    }

    /// Go's `fmtSbx`.
    fn hex_string(&mut self, s: &str, upper: bool) {
        let b = s.as_bytes();
        let len = self.f.prec.map_or(b.len(), |p| p.min(b.len()));
        let x = if upper { 'X' } else { 'x' };
        let mut width = 2 * len;
        if width > 0 {
            if self.f.space {
                if self.f.sharp {
                    width *= 2;
                }
                width += len - 1;
            } else if self.f.sharp {
                width += 2;
            }
        } else {
            if let Some(w) = self.f.wid {
                self.padding(w);
            }
            return;
        }
        let wid = self.f.wid.unwrap_or(0);
        if wid > width && !self.f.minus {
            self.padding(wid - width);
        }
        if self.f.sharp {
            self.out.push('0');
            self.out.push(x);
        }
        for (i, c) in b[..len].iter().enumerate() {
            if self.f.space && i > 0 {
                self.out.push(' ');
                if self.f.sharp {
                    self.out.push('0');
                    self.out.push(x);
                }
            }
            let _ = if upper {
                write!(self.out, "{c:02X}")
            } else {
                write!(self.out, "{c:02x}")
            };
        }
        if wid > width && self.f.minus {
            self.padding(wid - width);
        }
    }

    /// Go's `fmtInteger` for an `int64`.
    fn integer(&mut self, v: i64, verb: char) -> Out<()> {
        let base: u32 = match verb {
            'b' => 2,
            'o' => 8,
            'x' | 'X' => 16,
            _ => 10,
        };
        // `%#v` of a signed integer is its `%v`.
        let negative = v < 0;
        let u = v.unsigned_abs();
        if self.f.prec == Some(0) && v == 0 {
            let zero = self.f.zero;
            self.f.zero = false;
            let w = self.f.wid.unwrap_or(0);
            self.padding(w);
            self.f.zero = zero;
            return Ok(());
        }
        let mut prec = 0usize;
        let mut zero = self.f.zero;
        if let Some(p) = self.f.prec {
            prec = p;
            zero = false;
        } else if self.f.zero && !self.f.minus && self.f.wid.is_some_and(|w| w > 0) {
            prec = self.f.wid.unwrap_or(0);
            if negative || self.f.plus || self.f.space {
                prec = prec.saturating_sub(1);
            }
        }
        let mut digits = match base {
            2 => format!("{u:b}"),
            8 => format!("{u:o}"),
            16 if verb == 'X' => format!("{u:X}"),
            16 => format!("{u:x}"),
            _ => u.to_string(),
        };
        if digits.len() < prec {
            digits = "0".repeat(prec - digits.len()) + &digits;
        }
        let mut s = String::new();
        if negative {
            s.push('-');
        } else if self.f.plus {
            s.push('+');
        } else if self.f.space {
            s.push(' ');
        }
        if self.f.sharp {
            match base {
                2 => s.push_str("0b"),
                8 if !digits.starts_with('0') => s.push('0'),
                16 => s.push_str(if verb == 'X' { "0X" } else { "0x" }),
                _ => {}
            }
        }
        s.push_str(&digits);
        let saved = self.f.zero;
        self.f.zero = zero;
        self.pad(&s);
        self.f.zero = saved;
        Ok(())
    }

    /// `%O`, `%c`, `%q`, `%U` of an integer.
    fn rune(&mut self, v: i64, verb: char) -> Out<()> {
        match verb {
            'c' => {
                let c = u32::try_from(v)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{fffd}');
                let mut b = [0u8; 4];
                let s = c.encode_utf8(&mut b).to_string();
                self.pad(&s);
                Ok(())
            }
            'q' => {
                let c = u32::try_from(v)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{fffd}');
                let mut s = String::from("'");
                quote_char(&mut s, c, '\'', self.f.plus);
                s.push('\'');
                self.pad(&s);
                Ok(())
            }
            'U' => {
                let mut s = format!("{:X}", v as u64);
                let prec = self.f.prec.filter(|p| *p > 4).unwrap_or(4);
                if s.len() < prec {
                    s = "0".repeat(prec - s.len()) + &s;
                }
                let mut s = format!("U+{s}");
                // `%#U` adds the character, quoted, when it is printable.
                if let Some(c) = u32::try_from(v).ok().and_then(char::from_u32)
                    && self.f.sharp
                    && is_print(c)
                {
                    let _ = write!(s, " '{c}'");
                }
                let zero = self.f.zero;
                self.f.zero = false;
                self.pad(&s);
                self.f.zero = zero;
                Ok(())
            }
            _ => Err(Unsure("%O of an integer")),
        }
    }

    /// Go's `fmtFloat` for `e E f g G` (`v` is `g`).
    fn float(&mut self, v: f64, verb: char, default_prec: Option<usize>) -> Out<()> {
        // `%#v` of a float is its `%v` (Go's `sharpV` adds nothing here).
        let prec = self.f.prec.or(default_prec);
        let mut body = match verb {
            'b' => binary_float(v),
            'x' | 'X' => hex_float(v, prec, verb),
            _ => format_float(v, verb, prec),
        };
        if self.f.sharp && verb != 'b' {
            body = sharp_float(&body, verb, prec);
        }
        let sign = if v.is_sign_negative() {
            '-'
        } else if self.f.plus {
            '+'
        } else if self.f.space {
            ' '
        } else {
            '\0'
        };
        if sign == '\0' {
            self.pad(&body);
            return Ok(());
        }
        let mut num = String::with_capacity(body.len() + 1);
        num.push(sign);
        num.push_str(&body);
        if self.f.zero && !self.f.minus && self.f.wid.is_some_and(|w| w > num.len()) {
            self.out.push(sign);
            let saved = self.f.wid;
            self.f.wid = saved.map(|w| w - 1);
            self.pad(&body);
            self.f.wid = saved;
        } else {
            self.pad(&num);
        }
        Ok(())
    }

    /// `*big.Int`'s own `Format` (math/big `intconv.go`).
    fn big(&mut self, neg: bool, digits: &str, verb: char) -> Out<()> {
        let f = self.f;
        let sign = if neg {
            "-"
        } else if f.plus || f.plus_v {
            "+"
        } else if f.space {
            " "
        } else {
            ""
        };
        let n: num_bigint_digits::Digits = num_bigint_digits::Digits(digits);
        let body = match verb {
            'd' | 's' | 'v' => digits.to_string(),
            'b' => n.radix(2)?,
            'o' | 'O' => n.radix(8)?,
            'x' => n.radix(16)?,
            'X' => n.radix(16)?.to_ascii_uppercase(),
            _ => {
                let _ = write!(
                    self.out,
                    "%!{verb}(big.Int={}{digits})",
                    if neg { "-" } else { "" }
                );
                return Ok(());
            }
        };
        let prefix = match verb {
            'O' => "0o",
            'b' if f.sharp || f.sharp_v => "0b",
            'o' if f.sharp || f.sharp_v => "0",
            'x' if f.sharp || f.sharp_v => "0x",
            'X' if f.sharp || f.sharp_v => "0X",
            _ => "",
        };
        let mut zeros = 0;
        if let Some(p) = f.prec {
            zeros = p.saturating_sub(body.len());
        }
        let length = sign.len() + prefix.len() + zeros + body.len();
        let (mut left, mut right) = (0, 0);
        if let Some(w) = f.wid.filter(|w| length < *w) {
            let d = w - length;
            if f.minus {
                right = d;
            } else if f.zero && f.prec.is_none() {
                zeros = d;
            } else {
                left = d;
            }
        }
        self.out.extend(std::iter::repeat_n(' ', left));
        self.out.push_str(sign);
        self.out.push_str(prefix);
        self.out.extend(std::iter::repeat_n('0', zeros));
        self.out.push_str(&body);
        self.out.extend(std::iter::repeat_n(' ', right));
        Ok(())
    }
}

/// Decimal digits of a big integer, rewritten in another base.
mod num_bigint_digits {
    use super::{Out, Unsure};

    pub(super) struct Digits<'a>(pub(super) &'a str);

    impl Digits<'_> {
        pub(super) fn radix(&self, base: u32) -> Out<String> {
            // Repeated division of the decimal digits by `base`.
            let mut n: Vec<u32> = self.0.bytes().map(|b| u32::from(b - b'0')).collect();
            if n.is_empty() || n.len() > 400 {
                return Err(Unsure("a big integer of that size"));
            }
            let mut out = Vec::new();
            while !(n.is_empty() || n.len() == 1 && n[0] == 0) {
                let mut rem = 0u32;
                let mut q = Vec::with_capacity(n.len());
                for d in &n {
                    let cur = rem * 10 + d;
                    q.push(cur / base);
                    rem = cur % base;
                }
                out.push(char::from_digit(rem, base).unwrap_or('0'));
                let first = q.iter().position(|d| *d != 0).unwrap_or(q.len() - 1);
                n = q[first..].to_vec();
            }
            if out.is_empty() {
                out.push('0');
            }
            Ok(out.iter().rev().collect())
        }
    }
}
