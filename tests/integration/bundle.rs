//! Catalogs as OPA bundles: `regent bundle build`, and `regent check` and
//! `regent test` given a bundle, with and without `--bundle-public-key`.
//! Keys are the test-only ones in tests/fixtures/bundle (regenerate.sh).
//! Bundles are taken apart and repacked here with the `tar` and `flate2`
//! crates to tamper with them; one is made and signed entirely by hand
//! (ring's RS256, digests written out here) in the layout and signature
//! format OPA documents, which regent must accept. No `opa` binary runs
//! here: interop with OPA itself is checked only against the documented
//! format.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use common::regent;
use ring::signature::RsaKeyPair;
use rustls::pki_types::PrivatePkcs8KeyDer;
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};
use sha2::Digest;

fn fixture(name: &str) -> PathBuf {
    common::repo_path(&format!("tests/fixtures/bundle/{name}"))
}

fn team_ops() -> PathBuf {
    common::repo_path("examples/team_ops")
}

fn run(args: &[&str]) -> Output {
    regent().args(args).output().expect("run regent")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Builds `dir` into `out`, signed with the fixture key `key` under key id
/// `ci` when given.
fn build(dir: &Path, out: &Path, key: Option<&str>) -> Output {
    let mut args = vec!["bundle", "build", s(dir), "-o", s(out)];
    let key_path;
    if let Some(k) = key {
        key_path = fixture(k);
        args.extend(["--signing-key", s(&key_path), "--key-id", "ci"]);
    }
    let o = run(&args);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    o
}

/// A bundle's entries: path as written, contents.
pub(crate) fn unpack(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    archive
        .entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let path = String::from_utf8(e.path_bytes().into_owned()).unwrap();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut data).unwrap();
            (path, data)
        })
        .collect()
}

/// A gzip tarball of `entries`, each a regular file unless its type says
/// otherwise. The path goes into the header's name field as is (`tar`'s
/// own `set_path` refuses `..`, which the tests need to write).
/// An entry to pack: path as written, contents, type.
pub(crate) type Entry = (String, Vec<u8>, tar::EntryType);

pub(crate) fn pack(entries: &[Entry]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut b = tar::Builder::new(gz);
    for (path, data, kind) in entries {
        let mut h = tar::Header::new_old();
        let name = &mut h.as_old_mut().name;
        name[..path.len()].copy_from_slice(path.as_bytes());
        h.set_entry_type(*kind);
        h.set_size(if kind.is_file() { data.len() as u64 } else { 0 });
        if kind.is_symlink() {
            h.set_link_name("team.rego").unwrap();
        }
        h.set_mode(0o644);
        h.set_cksum();
        let body: &[u8] = if kind.is_file() { data } else { &[] };
        b.append(&h, body).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

pub(crate) fn regular(entries: Vec<(String, Vec<u8>)>) -> Vec<Entry> {
    entries
        .into_iter()
        .map(|(p, d)| (p, d, tar::EntryType::Regular))
        .collect()
}

#[test]
fn a_signed_bundle_builds_reproducibly_and_verifies_for_check_and_test() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.tar.gz");
    let two = dir.path().join("two.tar.gz");
    let o = build(&team_ops(), &one, Some("rsa.pem"));
    assert!(
        stdout(&o).contains("signed (RS256, key id `ci`)"),
        "{}",
        stdout(&o)
    );
    build(&team_ops(), &two, Some("rsa.pem"));
    let bytes = std::fs::read(&one).unwrap();
    assert_eq!(
        bytes,
        std::fs::read(&two).unwrap(),
        "the build is reproducible"
    );

    let names: Vec<String> = unpack(&bytes).into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        names,
        [
            ".manifest",
            ".signatures.json",
            "data.json",
            "deploy.rego",
            "rollback.rego",
            "team.rego",
            "team_ops.test.yaml",
            "team_ops.yaml"
        ]
    );
    let manifest: Value = serde_json::from_slice(&unpack(&bytes)[0].1).unwrap();
    assert_eq!(manifest["roots"], json!([""]));
    assert_eq!(manifest["rego_version"], json!(1));
    assert_eq!(manifest["revision"].as_str().unwrap().len(), 64);

    let key = fixture("rsa.pub");
    let check = run(&["check", s(&one), "--bundle-public-key", s(&key)]);
    assert!(
        check.status.success(),
        "{}{}",
        stdout(&check),
        stderr(&check)
    );
    assert!(
        stderr(&check).contains("signature verified (key id `ci`)"),
        "{}",
        stderr(&check)
    );
    // Findings name the file inside the bundle, not where it was unpacked:
    // team_ops checks clean, so a copy whose library counts a claim (which
    // the proof's caller classes cannot cover) gives one at team.rego.
    let copy = dir.path().join("team_ops");
    std::fs::create_dir(&copy).unwrap();
    for e in std::fs::read_dir(team_ops()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
    }
    let team = copy.join("team.rego");
    let text = std::fs::read_to_string(&team).unwrap();
    std::fs::write(
        &team,
        format!("{text}\nwide if count(input.caller.claims.groups) > 2\n"),
    )
    .unwrap();
    let three = dir.path().join("three.tar.gz");
    build(&copy, &three, Some("rsa.pem"));
    let check = run(&["check", s(&three), "--bundle-public-key", s(&key)]);
    let out = stdout(&check);
    assert!(
        out.contains(&format!("{}:team.rego:", s(&three))) && out.contains(": warning"),
        "{out}"
    );
    assert!(!out.contains("regent-bundle-"), "{out}");

    let test = run(&["test", s(&one), "--bundle-public-key", s(&key)]);
    assert!(test.status.success(), "{}{}", stdout(&test), stderr(&test));
    assert!(
        stdout(&test).contains("16 passed, 0 failed"),
        "{}",
        stdout(&test)
    );

    // The same bundle read without a key: accepted, said to be unverified.
    let unverified = run(&["check", s(&one)]);
    assert!(unverified.status.success());
    assert!(
        stderr(&unverified).contains("signed (key id `ci`), signature not verified"),
        "{}",
        stderr(&unverified)
    );
}

#[test]
fn ec_keys_and_jwk_sets_verify_and_a_key_of_another_kind_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let ec = dir.path().join("ec.tar.gz");
    build(&team_ops(), &ec, Some("ec.pem"));
    let ok = run(&[
        "check",
        s(&ec),
        "--bundle-public-key",
        s(&fixture("ec.pub")),
    ]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let wrong = run(&[
        "check",
        s(&ec),
        "--bundle-public-key",
        s(&fixture("rsa.pub")),
    ]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        stderr(&wrong)
            .contains(".signatures.json: the bundle is signed with ES256, which the key in"),
        "{}",
        stderr(&wrong)
    );
    // A JWK set: the key is chosen by the signature's key id.
    let rsa = dir.path().join("rsa.tar.gz");
    build(&team_ops(), &rsa, Some("rsa.pem"));
    let jwks = run(&[
        "check",
        s(&rsa),
        "--bundle-public-key",
        s(&fixture("rsa.jwks.json")),
    ]);
    assert!(jwks.status.success(), "{}", stderr(&jwks));
}

/// One refusal per way a bundle can be wrong: each made from a good signed
/// bundle, each read with the right public key.
#[test]
fn tampered_truncated_and_unsafe_bundles_are_refused_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.tar.gz");
    build(&team_ops(), &good, Some("rsa.pem"));
    let other = dir.path().join("other.tar.gz");
    build(&team_ops(), &other, Some("other.pem"));
    let bytes = std::fs::read(&good).unwrap();
    let entries = unpack(&bytes);
    let edited = |f: &dyn Fn(&mut Vec<Entry>)| {
        let mut e = regular(entries.clone());
        f(&mut e);
        pack(&e)
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "signed with another key",
            std::fs::read(&other).unwrap(),
            ".signatures.json: the signature does not verify with the key in",
        ),
        (
            "a policy changed after signing",
            edited(&|e| {
                let p = e.iter_mut().find(|x| x.0 == "deploy.rego").unwrap();
                p.1.extend_from_slice(b"\n# changed\n");
            }),
            ":deploy.rego: the file's digest does not match the bundle's signature",
        ),
        (
            "data changed after signing",
            edited(&|e| {
                let p = e.iter_mut().find(|x| x.0 == "data.json").unwrap();
                p.1 = br#"{"oncall": ["mallory"]}"#.to_vec();
            }),
            ":data.json: the file's digest does not match the bundle's signature",
        ),
        (
            "a file added",
            edited(&|e| {
                e.push((
                    "extra.rego".into(),
                    b"package extra\n".to_vec(),
                    tar::EntryType::Regular,
                ));
            }),
            ":extra.rego: the file is not covered by the bundle's signature",
        ),
        (
            "a file removed",
            edited(&|e| e.retain(|x| x.0 != "rollback.rego")),
            ":rollback.rego: the bundle's signature lists this file but the bundle does not hold it",
        ),
        (
            "the signature removed",
            edited(&|e| e.retain(|x| x.0 != ".signatures.json")),
            "the bundle is not signed (no .signatures.json) and --bundle-public-key requires a signature",
        ),
        (
            "truncated",
            bytes[..bytes.len() - 9].to_vec(),
            "the bundle is truncated",
        ),
        (
            "not gzip",
            b"this is not a bundle".to_vec(),
            "the bundle is not a readable gzip tarball",
        ),
        (
            "a path climbing out",
            edited(&|e| {
                e.push((
                    "../escape.rego".into(),
                    b"package x\n".to_vec(),
                    tar::EntryType::Regular,
                ));
            }),
            ":../escape.rego: the entry's path climbs out of the bundle",
        ),
        (
            "a symbolic link",
            edited(&|e| {
                e.push(("link.rego".into(), Vec::new(), tar::EntryType::Symlink));
            }),
            ":link.rego: the bundle entry is a symbolic link",
        ),
        (
            "two entries at one path",
            edited(&|e| {
                let dup = e.iter().find(|x| x.0 == "team.rego").unwrap().clone();
                e.push(dup);
            }),
            ":team.rego: the bundle holds two entries at this path",
        ),
    ];
    let key = fixture("rsa.pub");
    for (what, bad, want) in cases {
        let path = dir.path().join("bad.tar.gz");
        std::fs::write(&path, &bad).unwrap();
        for command in ["check", "test"] {
            let o = run(&[command, s(&path), "--bundle-public-key", s(&key)]);
            assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
            let err = stderr(&o);
            assert!(
                err.starts_with(&format!("error: {}", s(&path))),
                "{what}: {err}"
            );
            assert!(err.contains(want), "{what}: wanted {want:?} in {err}");
            assert!(
                o.stdout.is_empty(),
                "{what}: a refused bundle reports nothing"
            );
        }
    }
}

/// The digest OPA's signature carries for a file: SHA-256 of its bytes, or
/// for `data.json` and `.manifest` of the canonical text of their value.
fn digest(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A bundle made and signed by hand, as the OPA documentation describes
/// one, with no help from regent: its `data.json` is written with other
/// whitespace and key order than the canonical text its digest is of, and
/// holds data for a directory below the root. regent must read it, and
/// the policy must see the data where OPA puts it.
#[test]
fn a_bundle_signed_by_hand_in_opas_format_verifies() {
    let canonical_manifest = br#"{"revision":"hand-1","roots":[""]}"#;
    let manifest = b"{\n  \"roots\": [\"\"],\n  \"revision\": \"hand-1\"\n}\n";
    let canonical_data = br#"{"limits":{"max":3}}"#;
    let data = b"{ \"limits\" : { \"max\" : 3 } }\n";
    let tools = std::fs::read(team_ops().join("team_ops.yaml")).unwrap();
    let mut files: Vec<(String, Vec<u8>, String)> = vec![
        (
            ".manifest".into(),
            manifest.to_vec(),
            digest(canonical_manifest),
        ),
        (
            "team/data.json".into(),
            data.to_vec(),
            digest(canonical_data),
        ),
        ("team_ops.yaml".into(), tools.clone(), digest(&tools)),
    ];
    for name in ["deploy.rego", "rollback.rego", "team.rego"] {
        let text = std::fs::read(team_ops().join(name)).unwrap();
        let d = digest(&text);
        files.push((name.into(), text, d));
    }
    // A policy that reads the nested data where OPA places it
    // (`team/data.json` is `data.team`), checked by a Rego test.
    let probe =
        b"package probe\n\ntest_nested_data_is_at_its_directory if data.team.limits.max == 3\n";
    files.push(("probe_test.rego".into(), probe.to_vec(), digest(probe)));
    let payload = json!({
        "files": files.iter().map(|(n, _, h)| json!({"name": n, "hash": h, "algorithm": "SHA-256"})).collect::<Vec<_>>(),
        "keyid": "ci",
        "iat": 1_700_000_000,
        "iss": "hand",
    });
    let der = PrivatePkcs8KeyDer::from_pem_file(fixture("rsa.pem")).unwrap();
    let key = RsaKeyPair::from_pkcs8(der.secret_pkcs8_der()).unwrap();
    let input = format!(
        "{}.{}",
        B64.encode(json!({"alg": "RS256", "kid": "ci"}).to_string()),
        B64.encode(payload.to_string())
    );
    let mut sig = vec![0; key.public().modulus_len()];
    key.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        input.as_bytes(),
        &mut sig,
    )
    .unwrap();
    let token = format!("{input}.{}", B64.encode(sig));
    let mut entries: Vec<Entry> = files
        .into_iter()
        // OPA writes paths from the root with a leading slash.
        .map(|(n, b, _)| (format!("/{n}"), b, tar::EntryType::Regular))
        .collect();
    entries.push((
        "/.signatures.json".into(),
        serde_json::to_vec(&json!({"signatures": [token]})).unwrap(),
        tar::EntryType::Regular,
    ));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hand.tar.gz");
    std::fs::write(&path, pack(&entries)).unwrap();
    let o = run(&[
        "test",
        s(&path),
        "--bundle-public-key",
        s(&fixture("rsa.pub")),
        "--run",
        "probe",
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("1 passed, 0 failed"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("revision hand-1, signature verified (key id `ci`)"),
        "{}",
        stderr(&o)
    );
}

/// `opa build` of Rego and data makes a bundle without tool files: regent
/// reads it as the policy part of a catalog whose tools are given beside
/// it, and alone refuses it, saying so.
#[test]
fn a_bundle_of_rego_and_data_only_is_the_policy_part_of_a_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let mut entries = vec![(
        "/data.json".to_string(),
        b"{}".to_vec(),
        tar::EntryType::Regular,
    )];
    for name in ["deploy.rego", "rollback.rego", "team.rego"] {
        let text = std::fs::read(team_ops().join(name)).unwrap();
        entries.push((format!("/{name}"), text, tar::EntryType::Regular));
    }
    let policy = dir.path().join("policy.tar.gz");
    std::fs::write(&policy, pack(&entries)).unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    for name in ["team_ops.yaml", "team_ops.test.yaml"] {
        std::fs::copy(team_ops().join(name), tools.join(name)).unwrap();
    }
    let o = run(&["test", s(&tools), s(&policy)]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("16 passed, 0 failed"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("no revision, not signed"),
        "{}",
        stderr(&o)
    );

    let alone = run(&["check", s(&policy)]);
    assert_eq!(alone.status.code(), Some(2));
    assert!(
        stderr(&alone)
            .contains("holds no tool files (a bundle of Rego and data only, as `opa build` makes)"),
        "{}",
        stderr(&alone)
    );
}

/// A problem inside a bundle is located in it: `bundle:path:line:column`.
#[test]
fn a_broken_policy_in_a_bundle_is_reported_at_its_place_in_the_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.tar.gz");
    build(&team_ops(), &good, None);
    let mut entries = regular(unpack(&std::fs::read(&good).unwrap()));
    let p = entries.iter_mut().find(|x| x.0 == "rollback.rego").unwrap();
    p.1 = b"package team_ops.rollback\n\nallow if {\n".to_vec();
    let bad = dir.path().join("bad.tar.gz");
    std::fs::write(&bad, pack(&entries)).unwrap();
    let o = run(&["check", s(&bad)]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("{}:rollback.rego:", s(&bad))),
        "{out}"
    );
    let json = run(&["check", s(&bad), "--format", "json"]);
    assert!(
        stdout(&json).contains(&format!("{}:rollback.rego", s(&bad))),
        "{}",
        stdout(&json)
    );
}

#[test]
fn build_refuses_a_catalog_opa_would_misread_or_that_does_not_load() {
    let yaml = std::fs::read_to_string(team_ops().join("team_ops.yaml")).unwrap();
    let mut files = vec![("data.yaml", yaml.as_str())];
    let rego: Vec<(String, String)> = ["deploy.rego", "rollback.rego", "team.rego"]
        .iter()
        .map(|n| {
            (
                n.to_string(),
                std::fs::read_to_string(team_ops().join(n)).unwrap(),
            )
        })
        .collect();
    for (n, t) in &rego {
        files.push((n.as_str(), t.as_str()));
    }
    let cat = common::catalog(&files);
    let out = cat.path().join("out.tar.gz");
    let o = run(&["bundle", "build", s(cat.path()), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("OPA reads `data.yaml` as data"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());

    let broken = common::catalog(&[("t.yaml", "tools:\n  - name: x\n    bogus: 1\n")]);
    let o = run(&["bundle", "build", s(broken.path()), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!out.exists());

    // A wrong key path fails before anything is built.
    let o = run(&[
        "bundle",
        "build",
        s(&team_ops()),
        "-o",
        s(&out),
        "--signing-key",
        "/nonexistent.pem",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot read the signing key /nonexistent.pem"),
        "{}",
        stderr(&o)
    );
}
