//! Parses arbitrary UTF-8 as a Kubernetes quantity. Whatever parses must print
//! as canonical text that parses back to the same amount.
#![no_main]

use kolo_api::quantity::Quantity;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let quantity = match Quantity::parse(text) {
        Ok(quantity) => quantity,
        Err(err) => {
            // Every error quotes (the start of) its input.
            let message = err.to_string();
            assert!(
                message.starts_with(&format!("invalid quantity {:?}: ", err.input())),
                "{message}"
            );
            return;
        }
    };
    let printed = quantity.to_string();
    let reparsed = Quantity::parse(&printed)
        .unwrap_or_else(|err| panic!("{text:?} printed as {printed:?}, which fails: {err}"));
    assert_eq!(reparsed, quantity, "{text:?} printed as {printed:?}");
    assert_eq!(reparsed.as_nanos(), quantity.as_nanos());
    assert_eq!(reparsed.milli_value(), quantity.milli_value());
    assert_eq!(reparsed.value(), quantity.value());
    // Printing a parsed quantity reaches a fixed point.
    let reprinted = reparsed.to_string();
    assert_eq!(
        Quantity::parse(&reprinted).map(|q| q.to_string()),
        Ok(reprinted.clone()),
        "{text:?} -> {printed:?} -> {reprinted:?}"
    );
});
