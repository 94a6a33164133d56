//! Typed reads find what tree lookups find; the text goes out as it came in.

use proptest::prelude::*;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::{
    LooseBool, LooseF64, LooseI64, LooseObj, LooseStr, LooseStrOrNum, LooseStrOrObj, LooseU64,
    LooseVec, Payload, Present,
};

mod event_id;

fn text(json: &str) -> Payload {
    Payload::from_text(RawValue::from_string(json.to_owned()).unwrap())
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Fields<'a> {
    #[serde(borrow)]
    a: LooseStr<'a>,
    #[serde(borrow)]
    b: LooseObj<Inner<'a>>,
    c: Option<IgnoredAny>,
    n: LooseU64,
    f: LooseF64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Inner<'a> {
    #[serde(borrow)]
    x: LooseStr<'a>,
}

/// What tree lookups find for the fields `Fields` reads.
type Found = (Option<String>, Option<Option<String>>, bool, Option<u64>, Option<f64>);

fn looked_up(v: &Value) -> Found {
    let a = v.get("a").and_then(Value::as_str).map(str::to_owned);
    let b = v
        .get("b")
        .filter(|b| b.is_object())
        .map(|b| b.get("x").and_then(Value::as_str).map(str::to_owned));
    let c = v.get("c").is_some_and(|c| !c.is_null());
    (a, b, c, v.get("n").and_then(Value::as_u64), v.get("f").and_then(Value::as_f64))
}

fn read(p: &Payload) -> Found {
    let f: Fields<'_> = p.read();
    let b = f.b.get().map(|i| i.x.get().map(str::to_owned));
    (f.a.get().map(str::to_owned), b, f.c.is_some(), f.n.0, f.f.0)
}

#[test]
fn typed_reads_find_what_lookups_find_whatever_the_shapes() {
    for json in [
        r#"{"a":"s","b":{"x":"t","y":[1,{"z":2}]},"c":0,"n":3,"f":-1.5}"#,
        r#"{"n":-3,"f":7}"#,
        r#"{"n":2.0,"f":"1"}"#,
        r#"{"a":1,"b":"not an object","c":null}"#,
        r#"{"a":{"deep":["x"]},"b":{"x":{"no":1}},"c":[]}"#,
        r#"{"a":"line\nbreak \u00e9","b":[],"other":{"a":"nested, not read"}}"#,
        r#"{}"#,
        r#"[1,2]"#,
        r#""a string""#,
        r#"null"#,
        // Duplicate keys: the tree keeps the last; the typed decode refuses and reads the tree.
        r#"{"a":"first","a":"last","b":{"x":"1","x":"2"}}"#,
    ] {
        let p = text(json);
        let v: Value = serde_json::from_str(json).unwrap();
        assert_eq!(read(&p), looked_up(&v), "{json}");
        assert_eq!(read(&Payload::from(v.clone())), looked_up(&v), "{json} as a tree");
    }
}

#[test]
fn strings_without_escapes_are_borrowed_from_the_text() {
    let p = text(r#"{"a":"plain","b":{"x":"esc\"aped"}}"#);
    let f: Fields<'_> = p.read();
    assert!(matches!(f.a.0, Some(std::borrow::Cow::Borrowed("plain"))));
    assert_eq!(f.b.get().and_then(|i| i.x.get()), Some("esc\"aped"));
}

#[test]
fn a_payload_is_written_as_its_text_until_changed() {
    let json = r#"{ "b" : 1,"a":[ "x" ] }"#;
    let mut p = text(json);
    assert_eq!(serde_json::to_string(&p).unwrap(), json, "byte for byte");
    assert_eq!(p["a"][0], "x", "reading the tree leaves the text");
    assert_eq!(p.text(), Some(json));
    assert_eq!(serde_json::to_string(&p).unwrap(), json);
    p.as_object_mut().unwrap().insert("c".into(), json!(2));
    assert_eq!(p.text(), None, "a change drops the text");
    assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"b":1,"a":["x"],"c":2}"#);
}

#[test]
fn a_memo_is_taken_only_when_nothing_shares_it() {
    let mut p = text(r#"{"a":1}"#);
    p.set_memo(7_u32);
    assert_eq!(p.take_memo::<u64>(), None, "another type stays");
    let shared = p.clone();
    assert_eq!(p.take_memo::<u32>(), None, "a clone shares it");
    assert_eq!(p.memo::<u32>(), Some(&7));
    drop(shared);
    assert_eq!(p.take_memo::<u32>(), Some(7));
    assert_eq!(p.memo::<u32>(), None);
}

#[test]
fn equality_compares_values_whatever_the_form() {
    let tree = Payload::from(json!({"a": 1, "b": "x"}));
    assert_eq!(text(r#"{"a":1,  "b":"x"}"#), tree);
    assert_ne!(text(r#"{"a":2,"b":"x"}"#), tree);
    assert!(text(" {}").is_object());
    assert!(!text("[]").is_object());
    assert!(Payload::default().is_object());
    let back: Payload = serde_json::from_str(r#"{"a":1,"b":"x"}"#).unwrap();
    assert_eq!(back, tree);
    assert_eq!(text(r#"{"k":[1]}"#).into_value(), json!({"k": [1]}));
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-4000i32..4000).prop_map(|i| Value::from(f64::from(i) / 4.0)),
        "[a-z\"\\\\\n é]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::vec((prop_oneof!["[abcfnx]", "[a-z]{1,3}"], inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn typed_reads_equal_lookups_on_any_json(v in arb_json()) {
        let json = serde_json::to_string(&v).unwrap();
        let p = text(&json);
        prop_assert_eq!(read(&p), looked_up(&v));
        prop_assert_eq!(serde_json::to_string(&p).unwrap(), json);
        prop_assert_eq!(p.value(), &v);
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Either<'a> {
    #[serde(borrow)]
    b: LooseStrOrObj<'a, Inner<'a>>,
}

/// `b` as a string, an object's `x`, or nothing: what lookups find.
fn either_looked_up(v: &Value) -> Option<Result<String, Option<String>>> {
    match v.get("b")? {
        Value::String(s) => Some(Ok(s.clone())),
        o @ Value::Object(_) => Some(Err(o.get("x").and_then(Value::as_str).map(str::to_owned))),
        _ => None,
    }
}

fn either_read(p: &Payload) -> Option<Result<String, Option<String>>> {
    let e: Either<'_> = p.read();
    match e.b {
        LooseStrOrObj::Str(s) => Some(Ok(s.into_owned())),
        LooseStrOrObj::Obj(i) => Some(Err(i.x.get().map(str::to_owned))),
        LooseStrOrObj::Absent => None,
    }
}

proptest! {
    #[test]
    fn a_string_or_object_field_reads_as_lookups_find_it(v in arb_json()) {
        let json = serde_json::to_string(&v).unwrap();
        prop_assert_eq!(either_read(&text(&json)), either_looked_up(&v));
        prop_assert_eq!(either_read(&Payload::from(v.clone())), either_looked_up(&v));
    }
}

/// The keys `Fields` reads, read as the other shapes.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Others<'a> {
    #[serde(rename = "n")]
    int: LooseI64,
    #[serde(rename = "a")]
    flag: LooseBool,
    #[serde(rename = "c", borrow)]
    id: LooseStrOrNum<'a>,
    #[serde(rename = "x", borrow)]
    list: LooseVec<LooseStr<'a>>,
    #[serde(rename = "b", borrow)]
    any_b: Present<LooseObj<Inner<'a>>>,
    #[serde(rename = "f")]
    any_f: Present<LooseU64>,
}

/// What tree lookups find for the fields `Others` reads: a string id as `Ok`, a number as
/// `Err` of its text as the tree writes it; `b` and `f` as found whatever their values.
type FoundOthers = (
    Option<i64>,
    Option<bool>,
    Option<Result<String, String>>,
    Option<Vec<Option<String>>>,
    Option<Option<Option<String>>>,
    Option<Option<u64>>,
);

fn others_looked_up(v: &Value) -> FoundOthers {
    let id = match v.get("c") {
        Some(Value::String(s)) => Some(Ok(s.clone())),
        Some(Value::Number(n)) => Some(Err(n.to_string())),
        _ => None,
    };
    let list = v
        .get("x")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|e| e.as_str().map(str::to_owned)).collect());
    let any_b = v
        .get("b")
        .map(|b| b.is_object().then(|| b.get("x").and_then(Value::as_str).map(str::to_owned)));
    (
        v.get("n").and_then(Value::as_i64),
        v.get("a").and_then(Value::as_bool),
        id,
        list,
        any_b,
        v.get("f").map(Value::as_u64),
    )
}

fn others_read(p: &Payload) -> FoundOthers {
    let o: Others<'_> = p.read();
    let id = match o.id {
        LooseStrOrNum::Str(s) => Some(Ok(s.into_owned())),
        LooseStrOrNum::Num(n) => Some(Err(n.to_string())),
        LooseStrOrNum::Absent => None,
    };
    let list = o.list.get().map(|l| l.iter().map(|e| e.get().map(str::to_owned)).collect());
    let any_b = o.any_b.0.map(|b| b.get().map(|i| i.x.get().map(str::to_owned)));
    (o.int.0, o.flag.0, id, list, any_b, o.any_f.0.map(|f| f.0))
}

#[test]
fn other_shapes_read_as_lookups_find_them() {
    for json in [
        r#"{"n":-3,"a":true,"c":"id","x":["s",1,null,"t"],"b":{"x":"in"},"f":4}"#,
        // `as_i64` takes a u64 up to i64::MAX, never a float; `as_bool` only booleans.
        r#"{"n":9223372036854775807,"a":1,"c":7,"x":"not an array","b":null,"f":null}"#,
        r#"{"n":9223372036854775808,"a":"true","c":-2,"x":{},"b":"s","f":-1}"#,
        r#"{"n":2.0,"a":null,"c":1e2,"x":[],"b":[],"f":2.5}"#,
        r#"{"n":-9223372036854775808,"a":false,"c":0.5,"x":[["s"]],"b":{},"f":"1"}"#,
        // An id's number is written as the tree writes it (`1E400` is refused as JSON).
        r#"{"c":-0}"#,
        r#"{"c":12345678901234567890}"#,
        r#"{"c":1.0e-7}"#,
        r#"{"c":true,"x":null}"#,
        r#"{"c":[1],"n":"1"}"#,
        r#"{"c":{"id":1}}"#,
        r#"{}"#,
        r#"[1]"#,
        // Duplicate keys: the tree keeps the last.
        r#"{"c":1,"c":"last","b":null,"b":{"x":"2"}}"#,
    ] {
        let p = text(json);
        let v: Value = serde_json::from_str(json).unwrap();
        assert_eq!(others_read(&p), others_looked_up(&v), "{json}");
        assert_eq!(
            others_read(&Payload::from(v.clone())),
            others_looked_up(&v),
            "{json} as a tree"
        );
    }
}

proptest! {
    #[test]
    fn other_shapes_read_as_lookups_find_them_on_any_json(v in arb_json()) {
        let json = serde_json::to_string(&v).unwrap();
        prop_assert_eq!(others_read(&text(&json)), others_looked_up(&v));
        prop_assert_eq!(others_read(&Payload::from(v.clone())), others_looked_up(&v));
    }
}

#[test]
fn unchecked_text_is_kept_as_is_without_a_read() {
    // Valid text: the same payload as a validated one, written byte for byte.
    let body = r#"{"a":"x","b":{"c":[1,2]}}"#;
    let unchecked = Payload::from_text_unchecked(body.to_owned());
    assert_eq!(unchecked.text(), Some(body));
    assert_eq!(unchecked, text(body));
    assert_eq!(serde_json::to_string(&unchecked).unwrap(), body);
    // Text that is not JSON is kept too: the protocol that skips the validation is the one in
    // use (were it refused, the text would have been validated and read as `null`). Reading
    // it whole gives `null`; a typed read gives nothing.
    let broken = Payload::from_text_unchecked("{\"a\":tru".to_owned());
    assert_eq!(broken.text(), Some("{\"a\":tru"));
    assert_eq!(broken.value(), &Value::Null);
    assert_eq!(broken.read::<Fields<'_>>().a, LooseStr(None));
}

#[test]
fn a_memo_is_kept_shared_by_a_clone_and_dropped_by_a_change() {
    let mut p = Payload::from_text(RawValue::from_string(r#"{"a":1}"#.to_owned()).unwrap());
    assert_eq!(p.memo::<u32>(), None);
    p.set_memo(7_u32);
    assert_eq!(p.memo::<u32>(), Some(&7));
    assert_eq!(p.memo::<u64>(), None, "another type is not it");
    let copy = p.clone();
    assert_eq!(copy.memo::<u32>(), Some(&7));
    let _ = p.value();
    assert_eq!(p.memo::<u32>(), Some(&7), "reading the tree keeps it");
    p["a"] = 2.into();
    assert_eq!(p.memo::<u32>(), None, "a change drops it");
    assert_eq!(copy.memo::<u32>(), Some(&7));
}

/// serde_json's writing of `text`'s value.
fn written(text: &str) -> String {
    serde_json::to_string(&serde_json::from_str::<Value>(text).unwrap()).unwrap()
}

#[test]
fn canonical_text_is_kept_and_near_canonical_text_rewritten() {
    use super::{Canonical, canonical};
    let same = [
        r#"{"a":"x\n\"\\","b":[1,-2,0,1.5,null,true,false],"c":{}}"#,
        r#"{"a":"\u001f\b\f\t\r","n":123456789012345678}"#,
        "[]",
        r#""é""#,
    ];
    for text in same {
        assert_eq!(canonical(text), Canonical::Same, "{text}");
        assert_eq!(written(text), text);
    }
    let rewritten = [
        r#"{ "a" : "caf\u00e9\u2019", "b" : [ 1 , 2 ] }"#,
        r#"{"a":"\/\u0041\u000a\u001F\u0022\u005c\ud83d\ude00"}"#,
        r#"{"a":1.50,"b":1e3,"c":-0,"d":18446744073709551616,"e":1E-7,"f":-1234567890123456789}"#,
        " {\"a\":1}\n",
    ];
    for text in rewritten {
        match canonical(text) {
            Canonical::Rewritten(out) => assert_eq!(out, written(text), "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    let tree = [
        r#"{"a":1,"a":2}"#,
        r#"{"\u0061":1}"#,
        r#"{"a":"\ud83d"}"#,
        r#"{"a":"\ude00"}"#,
        &format!("{}{}", "[".repeat(101), "]".repeat(101)),
        "{\"a\":tru",
        "[1] 2",
        // A control character is no string's end, wherever it falls.
        "{\"a\":\"\u{1},\"b\":1}",
        "{\"a\":\"\\n\u{1f},\"b\":1}",
        "{\"a\":\"0123456789abcdef\n\"}",
    ];
    for text in tree {
        assert_eq!(canonical(text), Canonical::Tree, "{text}");
    }
    let keys = (0..33).map(|i| format!("\"k{i}\":{i}")).collect::<Vec<_>>();
    assert_eq!(canonical(&format!("{{{}}}", keys[..32].join(","))), Canonical::Same);
    assert_eq!(canonical(&format!("{{{}}}", keys.join(","))), Canonical::Tree);
    // A key sent twice is found wherever the two fall: both among the first eight keys read
    // (kept in an array), one there and one after, both after (kept in a `Vec`).
    for (first, second) in [(1, 5), (2, 12), (10, 20)] {
        let mut twice = keys[..21].to_vec();
        twice[second] = twice[first].clone();
        let text = format!("{{{}}}", twice.join(","));
        assert_eq!(canonical(&text), Canonical::Tree, "{text}");
    }
    let kept = Payload::as_written(rewritten[0]).unwrap();
    assert_eq!(kept.text(), Some(written(rewritten[0]).as_str()));
    assert!(Payload::as_written(tree[0]).is_none());
}

/// `text` with every character past ASCII written as `\u` escapes (as Python's `json.dumps`
/// writes it).
fn ascii_escaped(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

proptest! {
    #[test]
    fn canonical_text_is_what_serde_json_writes(
        v in arb_json(),
        x in any::<f64>().prop_filter("finite", |x| x.is_finite()),
    ) {
        use super::{Canonical, canonical};
        let compact = serde_json::to_string(&v).unwrap();
        prop_assert_eq!(canonical(&compact), Canonical::Same);
        let forms = [
            serde_json::to_string_pretty(&v).unwrap(),
            ascii_escaped(&compact),
            format!("[{x:e},{x:?}]"),
        ];
        for form in forms {
            match canonical(&form) {
                Canonical::Same => prop_assert_eq!(&written(&form), &form),
                Canonical::Rewritten(out) => prop_assert_eq!(out, written(&form)),
                // Only a key with an escape is left to the tree here.
                Canonical::Tree => prop_assert!(form.contains("\\u"), "{}", form),
            }
        }
    }
}

#[test]
fn a_string_field_set_in_canonical_text_is_written_as_the_tree_would_be() {
    let body = r#"{"item_id":"m","delta":"a","seq":3}"#;
    let mut p = text(body);
    assert!(p.set_str_in_text("delta", "x\n\"é\u{1}"));
    let mut tree = serde_json::from_str::<Value>(body).unwrap();
    tree["delta"] = "x\n\"é\u{1}".into();
    assert_eq!(p.text(), Some(serde_json::to_string(&tree).unwrap().as_str()));
    assert_eq!(p.value(), &tree);
    // Not done: a field that is not a string or is absent, text not written as its tree
    // would be, a payload held as a tree.
    for (body, key) in [(body, "seq"), (body, "text"), (r#"{"delta": "a"}"#, "delta")] {
        let mut p = text(body);
        assert!(!p.set_str_in_text(key, "x"), "{body} {key}");
        assert_eq!(p.text(), Some(body));
    }
    assert!(!Payload::from(json!({"delta": "a"})).set_str_in_text("delta", "x"));
}

#[test]
fn top_level_string_fields_are_found_where_the_written_text_holds_them() {
    use super::{Field, canonical_fields};
    let found = |text: &str| {
        let (canonical, found) = canonical_fields(text, ["a", "b", "c", "d"]);
        let written = match canonical {
            super::Canonical::Same => text.to_owned(),
            super::Canonical::Rewritten(out) => out,
            super::Canonical::Tree => return None,
        };
        Some(found.map(|f| match f {
            Field::At(at) => Some(written[at].to_owned()),
            Field::Escaped => Some("<escaped>".to_owned()),
            Field::Absent => None,
        }))
    };
    let s = |v: &str| Some(v.to_owned());
    assert_eq!(
        found(r#"{"a":"x","b":{"a":"y"},"c":1,"e":"z"}"#),
        Some([s("x"), None, None, None]),
        "only top-level strings"
    );
    assert_eq!(
        found("{ \"b\" : \"caf\\u00e9\\/\" ,\n \"a\": \"\\n\", \"d\":\"1.50\", \"x\": 1.50 }"),
        Some([s("<escaped>"), s("café/"), None, s("1.50")]),
        "in the rewritten text"
    );
    assert_eq!(found(r#"{"a":"x","a":"y"}"#), None, "a key twice is not decided here");
    assert_eq!(found(r#"["a","b"]"#), Some([None, None, None, None]));
}

/// Bytes around the ones that end a string's plain run, each likely enough to fall at any
/// place of a block: the stops, their neighbours, and bytes of multi-byte characters.
fn arb_string_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        6 => b'a'..=b'z',
        1 => Just(b'"'),
        1 => Just(b'\\'),
        1 => prop_oneof![0u8..0x20, Just(0x20), Just(b'!'), Just(b'#'), Just(b'['), Just(b']')],
        1 => 0x80u8..=0xff,
    ];
    prop::collection::vec(byte, 0..80)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// `string_stop` finds the first `"`, `\` or control character from where it is asked
    /// to look, wherever that falls against its sixteen-byte steps (within a step, at a
    /// step's edge, in the last fewer than sixteen bytes, or nowhere).
    #[test]
    fn the_first_stop_of_a_string_run_is_found_wherever_it_falls(
        bytes in arb_string_bytes(),
        at in 0usize..90,
    ) {
        let is_stop = |b: &u8| *b == b'"' || *b == b'\\' || *b < 0x20;
        let expected = bytes.get(at..).and_then(|rest| rest.iter().position(is_stop));
        prop_assert_eq!(super::string_stop(&bytes, at), expected.map(|i| at + i));
        for block in bytes.as_chunks::<{ super::canon::STEP }>().0 {
            let expected = block.iter().position(is_stop);
            prop_assert_eq!(super::canon::first_stop_words(block), expected);
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            {
                let all = (0..block.len()).filter(|&i| is_stop(&block[i]));
                let mask = all.fold(0u32, |m, i| m | 1 << i);
                prop_assert_eq!(super::canon::stops_sse2(block), mask);
            }
        }
    }
}

/// A top-level object's text as the flat read meets it: keys plain, escaped, long or twice;
/// values it reads (strings without escapes, plain integers, `true`, `false`, `null`) and
/// ones it leaves to the walk; whitespace sometimes. With whether the flat read must take it.
fn arb_flat_text() -> impl Strategy<Value = (String, bool)> {
    let key = prop_oneof![
        Just(("a", true)),
        Just(("b", true)),
        Just(("d", true)),
        Just(("item_id", true)),
        Just(("a_key_longer_than_one_step", true)),
        Just(("x\\u0061", false)),
        // A raw control character that would end the key, were it read as an end.
        Just(("\u{1}:1,\"a", false)),
    ];
    let value = prop_oneof![
        "[a-z é😀]{0,24}".prop_map(|s| (format!("\"{s}\""), true)),
        // serde_json writes a raw control character other than these five as `\u00XX`.
        "[a-z\"\\\\\n\t\r\u{8}\u{c}\u{1} é]{0,24}"
            .prop_map(|s| (serde_json::to_string(&s).unwrap(), !s.contains('\u{1}'))),
        // Escapes serde_json writes otherwise.
        prop_oneof![Just(r#""a\/b""#), Just(r#""\u00e9""#), Just(r#""a\u0001""#), Just(r#""a\x""#)]
            .prop_map(|w| (w.to_owned(), false)),
        any::<i64>().prop_map(|n| (n.to_string(), n.unsigned_abs() < 10u64.pow(18))),
        "-?[0-9]{1,21}(\\.[0-9]|e1)?".prop_map(|n| (n, false)),
        prop_oneof![Just("true"), Just("false"), Just("null")].prop_map(|w| (w.to_owned(), true)),
        prop_oneof![
            Just("tru"),
            Just("nul"),
            Just("-0"),
            Just("-"),
            Just("1.5"),
            Just("{}"),
            Just("[1]"),
            Just("{\"a\":1}"),
            Just("\"a\u{1}\""),
            // A raw control character that would end the string, were it read as an end.
            Just("\"\u{1},\"b\":\"1\""),
            Just("\"a\u{1}n\""),
            // Past an i64 and past a u64: read as floats, written otherwise.
            Just("-9999999999999999999"),
            Just("99999999999999999999"),
        ]
        .prop_map(|w| (w.to_owned(), false)),
    ];
    let space = prop_oneof![4 => Just(""), 1 => Just(" ")];
    (prop::collection::vec((key, value, space), 0..10), any::<bool>()).prop_map(
        |(fields, trailing)| {
            let mut text = String::from("{");
            let mut keys = Vec::new();
            let mut taken = fields.len() <= 8;
            for (i, ((key, plain_key), (value, plain_value), space)) in fields.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                text.push_str(&format!("\"{key}\":{space}{value}"));
                taken &= *plain_key && *plain_value && space.is_empty() && !keys.contains(key);
                keys.push(*key);
            }
            text.push('}');
            if trailing {
                text.push_str(",\"after\"");
            }
            (text, taken)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// The flat read finds what the walk finds, where it decides; and it decides every flat
    /// object written as serde_json writes it, of up to 8 keys.
    #[test]
    fn a_flat_object_is_read_as_the_walk_reads_it((text, taken) in arb_flat_text()) {
        use super::canon::{flat, walk_leading_fields};
        use super::Canonical;
        let keys = ["a", "b", "item_id", "d"];
        let walked = walk_leading_fields(&text, keys);
        match flat(&text, keys) {
            Some((found, len)) => prop_assert_eq!((Canonical::Same, found, len), walked, "{}", text),
            None => prop_assert!(!taken, "{}", text),
        }
    }
}
