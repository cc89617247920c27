//! `net.cidr_contains`, `net.cidr_is_valid` and `net.cidr_expand` as OPA
//! answers them: Go's `net.ParseCIDR`, `net.ParseIP` and `IPNet.Contains`.
//!
//! Why (issue 27): Go reads an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`)
//! as the IPv4 address it maps, where regorus (`ipnet`) keeps it IPv6. So
//! in OPA `net.cidr_contains("10.0.0.0/8", "::ffff:10.0.0.1")` is true and
//! `net.cidr_contains("::/0", "::ffff:10.0.0.1")` false; regorus answered
//! the opposite, loosening a deny rule. A mapped network
//! (`::ffff:10.0.0.0/104`) is, to Go, the IPv4 network its last 32 bits
//! of mask make (`10.0.0.0/8`), once the mask is applied: `::ffff:0:0/80`
//! masks the `ffff` away and is the IPv6 network `::/80`. Go also takes a
//! prefix length with leading zeros (`/08`) and refuses a sign (`/+8`).
//!
//! Addresses are Go's byte slices here: 4 bytes, or 16; every rule below
//! was checked against OPA's engine (tests).

use regorus::Value;

use super::error;

/// The 12 bytes that make a 16-byte address an IPv4-mapped one.
const V4_IN_V6: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/// Beyond this many addresses, `net.cidr_expand` is left to regorus (or
/// refused, where regorus would differ): the list is not bounded here.
const EXPAND_MAX: u128 = 1 << 16;

/// A network as Go's `ParseCIDR` returns it: the address with the mask
/// applied, and the mask (4 bytes for an IPv4 text, 16 otherwise).
struct Net {
    ip: Vec<u8>,
    mask: Vec<u8>,
    /// The mask as written was plain digits and the address not mapped:
    /// a network regorus reads as Go does.
    plain: bool,
}

/// Go's `net.ParseIP`: always 16 bytes.
fn parse_ip(s: &str) -> Option<Vec<u8>> {
    match s.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(v4) => Some(v4.to_ipv6_mapped().octets().to_vec()),
        std::net::IpAddr::V6(v6) => Some(v6.octets().to_vec()),
    }
}

/// Go's `net.ParseCIDR`: the address up to the first `/`, then a decimal
/// prefix length (leading zeros allowed, no sign) within the address's bits.
fn parse_cidr(s: &str) -> Option<Net> {
    let (addr, bits) = s.split_once('/')?;
    let (ip, len, mapped) = match addr.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(v4) => (v4.to_ipv6_mapped().octets().to_vec(), 4, false),
        std::net::IpAddr::V6(v6) => (v6.octets().to_vec(), 16, v6.octets()[..12] == V4_IN_V6),
    };
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = bits.trim_start_matches('0');
    let ones: usize = if digits.is_empty() {
        0
    } else if digits.len() > 3 {
        return None;
    } else {
        digits.parse().ok()?
    };
    if ones > 8 * len {
        return None;
    }
    let mask: Vec<u8> = (0..len)
        .map(|i| {
            let set = ones.saturating_sub(8 * i).min(8);
            (0xffu16 << (8 - set)) as u8
        })
        .collect();
    let ip = apply_mask(&ip, &mask)?;
    let plain = !mapped && bits.len() == digits.len().max(1);
    Some(Net { ip, mask, plain })
}

/// Go's `IP.Mask`: a 16-byte mask of an IPv4 address drops its first 12
/// bytes when they are all ones, a 4-byte mask of a mapped address takes
/// its last 4 bytes; other lengths that differ have no answer.
fn apply_mask(ip: &[u8], mask: &[u8]) -> Option<Vec<u8>> {
    let mut ip = ip;
    let mut mask = mask;
    if mask.len() == 16 && ip.len() == 4 && mask[..12].iter().all(|&b| b == 0xff) {
        mask = &mask[12..];
    }
    if mask.len() == 4 && ip.len() == 16 && ip[..12] == V4_IN_V6 {
        ip = &ip[12..];
    }
    if ip.len() != mask.len() {
        return None;
    }
    Some(ip.iter().zip(mask).map(|(a, m)| a & m).collect())
}

/// Go's `IP.To4`: the IPv4 address a 4-byte or mapped 16-byte one is.
fn to4(ip: &[u8]) -> Option<&[u8]> {
    match ip.len() {
        4 => Some(ip),
        16 if ip[..12] == V4_IN_V6 => Some(&ip[12..]),
        _ => None,
    }
}

/// Go's `IPNet.Contains`: both sides IPv4 when they can be, and a family
/// that differs is not contained.
fn contains(net: &Net, ip: &[u8]) -> bool {
    let Some(nn) = to4(&net.ip).or((net.ip.len() == 16).then_some(&net.ip[..])) else {
        return false;
    };
    let mask = match (net.mask.len(), nn.len()) {
        (4, 4) => &net.mask[..],
        (4, _) => return false,
        (16, 4) => &net.mask[12..],
        _ => &net.mask[..],
    };
    let ip = to4(ip).unwrap_or(ip);
    ip.len() == nn.len() && (0..ip.len()).all(|i| nn[i] & mask[i] == ip[i] & mask[i])
}

/// `net.cidr_contains(cidr, cidr_or_ip)`: an address is contained as Go's
/// `Contains` says; a network when its first and last addresses are.
pub(super) fn cidr_contains(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let (Value::String(cidr), Value::String(other)) = (&a[0], &a[1]) else {
        return None;
    };
    let name = "net.cidr_contains";
    let Some(net) = parse_cidr(cidr) else {
        return error(name, format!("invalid CIDR address: {cidr}"));
    };
    if let Some(ip) = parse_ip(other) {
        return Some(Ok(Value::from(contains(&net, &ip))));
    }
    let Some(inner) = parse_cidr(other) else {
        return error(
            name,
            format!("not a valid textual representation of an IP address or CIDR: {other}"),
        );
    };
    let last: Vec<u8> = inner
        .ip
        .iter()
        .zip(&inner.mask)
        .map(|(a, m)| a | !m)
        .collect();
    Some(Ok(Value::from(
        contains(&net, &inner.ip) && contains(&net, &last),
    )))
}

/// `net.cidr_is_valid(s)`: whether Go's `ParseCIDR` takes `s`; anything
/// but a string is `false` in OPA, where regorus raises a type error.
pub(super) fn cidr_is_valid(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let valid = match &a[0] {
        Value::String(s) => parse_cidr(s).is_some(),
        _ => false,
    };
    Some(Ok(Value::from(valid)))
}

/// `net.cidr_expand(cidr)`: every address of the network, from the masked
/// one up, each written as Go writes an IP (a mapped one as IPv4).
pub(super) fn cidr_expand(a: &[Value]) -> Option<anyhow::Result<Value>> {
    let Value::String(s) = &a[0] else {
        return None;
    };
    let name = "net.cidr_expand";
    let Some(net) = parse_cidr(s) else {
        return error(name, format!("invalid CIDR address: {s}"));
    };
    let ones: u32 = net.mask.iter().map(|b| b.count_ones()).sum();
    let host_bits = 8 * net.mask.len() as u32 - ones;
    if 1u128.checked_shl(host_bits).is_none_or(|n| n > EXPAND_MAX) {
        if net.plain {
            return None;
        }
        return error(
            name,
            format!(
                "{s} expands past {EXPAND_MAX} addresses, which regent does not support here; write the network without the ::ffff: prefix or the sign"
            ),
        );
    }
    let mut start = [0u8; 16];
    start[16 - net.ip.len()..].copy_from_slice(&net.ip);
    let first = u128::from_be_bytes(start);
    let hosts = (0..1u128 << host_bits).map(|k| {
        let bytes = (first + k).to_be_bytes();
        let ip = &bytes[16 - net.ip.len()..];
        Value::from(go_ip_string(ip))
    });
    Some(Ok(Value::from(hosts.collect::<Vec<_>>())))
}

/// Go's `IP.String`: dotted IPv4 when the address is one, else RFC 5952.
fn go_ip_string(ip: &[u8]) -> String {
    if let Some(v4) = to4(ip) {
        return std::net::Ipv4Addr::new(v4[0], v4[1], v4[2], v4[3]).to_string();
    }
    let mut b = [0u8; 16];
    b.copy_from_slice(ip);
    std::net::Ipv6Addr::from(b).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(f: fn(&[Value]) -> Option<anyhow::Result<Value>>, args: &[&str]) -> String {
        let args: Vec<Value> = args.iter().map(|s| Value::from(*s)).collect();
        match f(&args).unwrap() {
            Ok(v) => serde_json::to_string(&v).unwrap(),
            Err(_) => "error".into(),
        }
    }

    #[test]
    fn contains_as_go() {
        // Each answer is OPA's, from its own engine.
        let cases = [
            ("10.0.0.0/8", "::ffff:10.0.0.1", "true"),
            ("::/0", "::ffff:10.0.0.1", "false"),
            ("::/0", "10.0.0.1", "false"),
            ("::ffff:10.0.0.0/104", "10.1.2.3", "true"),
            ("::ffff:10.0.0.0/104", "11.1.2.3", "false"),
            ("::ffff:10.0.0.0/104", "::ffff:10.1.2.3", "true"),
            ("::ffff:0:0/96", "1.2.3.4", "true"),
            ("::ffff:0:0/80", "1.2.3.4", "false"),
            ("::ffff:0:0/80", "::1", "true"),
            ("::ffff:0:0/95", "1.2.3.4", "false"),
            ("10.0.0.0/8", "::ffff:10.0.0.0/104", "true"),
            ("10.0.0.0/8", "::ffff:10.0.0.0/120", "true"),
            ("10.0.0.0/8", "::ffff:10.0.0.0/100", "false"),
            ("::ffff:10.0.0.0/104", "10.0.0.0/16", "true"),
            ("::ffff:10.0.0.0/104", "10.0.0.0/7", "false"),
            ("::/0", "10.0.0.0/8", "false"),
            ("::/0", "::ffff:10.0.0.0/104", "false"),
            ("0.0.0.0/0", "::ffff:10.0.0.0/104", "true"),
            ("10.0.0.0/08", "10.0.0.1", "true"),
            ("10.0.0.0/+8", "10.0.0.1", "error"),
            ("10.0.0.0/8", "010.0.0.1", "error"),
            ("10.0.0.0/8", " 10.0.0.1", "error"),
            ("10.0.0.0/8", "10.0.0.1/", "error"),
            ("10.0.0.0/8", "fe80::1%eth0", "error"),
            ("10.0.0.1", "10.0.0.1", "error"),
            ("10.0.0.0/8", "::1.2.3.4", "false"),
            ("::/96", "::1.2.3.4", "true"),
            ("::/96", "1.2.3.4", "false"),
            ("10.0.0.0/8", "10.0.0.0/8/", "error"),
            ("10.0.0.0/8", "1.2.3", "error"),
            ("10.0.0.0/8", "", "error"),
            ("10.0.0.0/8", "0x0a.0.0.1", "error"),
            ("10.0.0.0/8", "10.0.0.1/33", "error"),
            ("10.0.0.0/8", "::ffff:10.0.0.1/128", "true"),
            ("10.0.0.0/8", "::ffff:10.0.0.1/129", "error"),
            ("10.1.2.3/8", "10.9.9.9", "true"),
            ("1:2:3:4:5:6:7:8/64", "1:2:3:4::", "true"),
            ("::FFFF:10.0.0.0/104", "10.1.2.3", "true"),
        ];
        for (net, ip, want) in cases {
            assert_eq!(call(cidr_contains, &[net, ip]), want, "{net} {ip}");
        }
    }

    #[test]
    fn valid_and_expand_as_go() {
        for (s, want) in [
            ("::ffff:10.0.0.0/104", "true"),
            ("::ffff:10.0.0.0/129", "false"),
            ("10.0.0.0/08", "true"),
            ("10.0.0.0/+8", "false"),
            ("10.0.0.0/-0", "false"),
            ("10.0.0.0/ 8", "false"),
            ("10.0.0.0/8/", "false"),
            ("fe80::1%eth0/64", "false"),
            ("10.0.0.0/0000000000000000000000008", "true"),
        ] {
            assert_eq!(call(cidr_is_valid, &[s]), want, "{s}");
        }
        for (s, want) in [
            (
                "::ffff:10.0.0.0/126",
                r#"["10.0.0.0","10.0.0.1","10.0.0.2","10.0.0.3"]"#,
            ),
            (
                "10.0.0.0/30",
                r#"["10.0.0.0","10.0.0.1","10.0.0.2","10.0.0.3"]"#,
            ),
            ("10.0.0.5/31", r#"["10.0.0.4","10.0.0.5"]"#),
            ("::1.2.3.4/127", r#"["::102:304","::102:305"]"#),
            ("::/127", r#"["::","::1"]"#),
            ("::ffff:0:0/127", r#"["0.0.0.0","0.0.0.1"]"#),
            ("::ffff:1.2.3.4/128", r#"["1.2.3.4"]"#),
            ("10.0.0.0/+31", "error"),
            ("10.0.0.0/032", r#"["10.0.0.0"]"#),
            ("1:2::/127", r#"["1:2::","1:2::1"]"#),
            ("10.0.0.1", "error"),
        ] {
            assert_eq!(call(cidr_expand, &[s]), want, "{s}");
        }
        // Large plain networks stay regorus'; large mapped ones are refused.
        assert!(cidr_expand(&[Value::from("10.0.0.0/8")]).is_none());
        let not_text = cidr_is_valid(&[Value::Null]).unwrap().unwrap();
        assert_eq!(not_text, Value::from(false));
        assert_eq!(call(cidr_expand, &["::ffff:10.0.0.0/104"]), "error");
    }
}
