//! Go's `fmt.Sprintf` loop over a format: the literal text, each verb's
//! flags, width and precision (`*` from an argument too), explicit argument
//! indexes (`%[2]d`), and the in-band errors of the format itself
//! (`%!d(MISSING)`, `%!(EXTRA …)`, `%!(NOVERB)`, `%!(BADWIDTH)`,
//! `%!(BADPREC)`, `%!v(BADINDEX)`). Formatting one argument for its verb is
//! `printer`'s; converting the arguments is the parent's (`convert`).

use std::fmt::Write as _;

use regorus::Value;

use super::printer::{Flags, Printer};
use super::{Arg, Out, Unsure, convert};

/// Go's `tooLarge`.
fn too_large(x: i64) -> bool {
    !(-1_000_000..=1_000_000).contains(&x)
}

/// Go's `parsenum` from byte `i`: the number, whether there was one, and
/// the index after it (the end of the format on overflow).
fn parse_num(s: &[u8], mut i: usize) -> (i64, bool, usize) {
    if i >= s.len() {
        return (0, false, s.len());
    }
    let (mut num, mut isnum) = (0i64, false);
    while i < s.len() && s[i].is_ascii_digit() {
        if too_large(num) {
            return (0, false, s.len());
        }
        num = num * 10 + i64::from(s[i] - b'0');
        isnum = true;
        i += 1;
    }
    (num, isnum, i)
}

/// Go's `intFromArg`: an argument used as a width or precision.
fn int_from_arg(args: &[Arg], n: usize) -> (i64, bool, usize) {
    if n < args.len() {
        let (num, ok) = match args[n] {
            Arg::Int(i) if !too_large(i) => (i, true),
            _ => (0, false),
        };
        (num, ok, n + 1)
    } else {
        (0, false, n)
    }
}

/// `fmt.Sprintf(format, args...)` over OPA's arguments.
pub(super) fn format_values(format: &str, values: &[Value]) -> Out<String> {
    let args: Vec<Arg> = values.iter().map(convert).collect::<Out<_>>()?;
    let mut p = Printer {
        out: String::with_capacity(format.len() + 16),
        f: Flags::default(),
    };
    let s = format.as_bytes();
    let end = s.len();
    let mut arg_num = 0usize;
    let mut reordered = false;
    let mut i = 0usize;
    // Go's `argNumber`: an explicit `[n]` at `i`.
    let arg_number = |arg_num: usize, i: usize, reordered: &mut bool, good: &mut bool| {
        if i >= end || s[i] != b'[' {
            return (arg_num, i, false);
        }
        *reordered = true;
        // parseArgNumber
        let rest = &s[i..];
        let (index, wid, ok) = if rest.len() < 3 {
            (0i64, 1usize, false)
        } else {
            match rest.iter().skip(1).position(|&c| c == b']') {
                Some(pos) => {
                    let close = pos + 1;
                    let (w, ok, newi) = parse_num(&rest[..close], 1);
                    if !ok || newi != close {
                        (0, close + 1, false)
                    } else {
                        (w - 1, close + 1, true)
                    }
                }
                None => (0, 1, false),
            }
        };
        if ok && index >= 0 && (index as usize) < args.len() {
            return (index as usize, i + wid, true);
        }
        *good = false;
        (arg_num, i + wid, ok)
    };
    while i < end {
        let mut good = true;
        let last = i;
        while i < end && s[i] != b'%' {
            i += 1;
        }
        if i > last {
            p.out.push_str(&format[last..i]);
        }
        if i >= end {
            break;
        }
        i += 1;
        p.f = Flags::default();
        let mut simple = false;
        while i < end {
            match s[i] {
                b'#' => p.f.sharp = true,
                b'0' => p.f.zero = true,
                b'+' => p.f.plus = true,
                b'-' => p.f.minus = true,
                b' ' => p.f.space = true,
                c => {
                    if c.is_ascii_lowercase() && arg_num < args.len() {
                        let verb = c as char;
                        if verb == 'v' {
                            p.f.sharp_v = p.f.sharp;
                            p.f.sharp = false;
                            p.f.plus_v = p.f.plus;
                            p.f.plus = false;
                        }
                        if verb == 'w' {
                            return Err(Unsure("%w"));
                        }
                        p.print_arg(&args[arg_num], verb)?;
                        arg_num += 1;
                        i += 1;
                        simple = true;
                    }
                    break;
                }
            }
            i += 1;
        }
        if simple {
            continue;
        }
        let mut after_index;
        (arg_num, i, after_index) = arg_number(arg_num, i, &mut reordered, &mut good);
        if i < end && s[i] == b'*' {
            i += 1;
            let (w, ok, n) = int_from_arg(&args, arg_num);
            arg_num = n;
            p.f.wid = if ok {
                Some(w.unsigned_abs() as usize)
            } else {
                None
            };
            if !ok {
                p.out.push_str("%!(BADWIDTH)");
                // Go keeps wid = 0 and widPresent false.
            }
            if w < 0 {
                p.f.minus = true;
                p.f.zero = false;
            }
            after_index = false;
        } else {
            let (w, ok, n) = parse_num(s, i);
            i = n;
            p.f.wid = ok.then_some(w as usize);
            if after_index && ok {
                good = false;
            }
        }
        if i + 1 < end && s[i] == b'.' {
            i += 1;
            if after_index {
                good = false;
            }
            (arg_num, i, after_index) = arg_number(arg_num, i, &mut reordered, &mut good);
            if i < end && s[i] == b'*' {
                i += 1;
                let (pr, ok, n) = int_from_arg(&args, arg_num);
                arg_num = n;
                let ok = ok && pr >= 0;
                p.f.prec = ok.then_some(pr as usize);
                if !ok {
                    p.out.push_str("%!(BADPREC)");
                }
                after_index = false;
            } else {
                let (pr, ok, n) = parse_num(s, i);
                i = n;
                p.f.prec = Some(if ok { pr as usize } else { 0 });
            }
        }
        if !after_index {
            (arg_num, i, _) = arg_number(arg_num, i, &mut reordered, &mut good);
        }
        if i >= end {
            p.out.push_str("%!(NOVERB)");
            break;
        }
        let verb = format[i..].chars().next().unwrap_or('\u{fffd}');
        i += verb.len_utf8();
        if verb == '%' {
            p.out.push('%');
        } else if !good {
            let _ = write!(p.out, "%!{verb}(BADINDEX)");
        } else if arg_num >= args.len() {
            let _ = write!(p.out, "%!{verb}(MISSING)");
        } else {
            if verb == 'w' {
                return Err(Unsure("%w"));
            }
            if verb == 'v' {
                p.f.sharp_v = p.f.sharp;
                p.f.sharp = false;
                p.f.plus_v = p.f.plus;
                p.f.plus = false;
            }
            p.print_arg(&args[arg_num], verb)?;
            arg_num += 1;
        }
    }
    if !reordered && arg_num < args.len() {
        p.f = Flags::default();
        p.out.push_str("%!(EXTRA ");
        for (j, a) in args[arg_num..].iter().enumerate() {
            if j > 0 {
                p.out.push_str(", ");
            }
            p.out.push_str(a.type_name());
            p.out.push('=');
            p.print_arg(a, 'v')?;
        }
        p.out.push(')');
    }
    Ok(p.out)
}
