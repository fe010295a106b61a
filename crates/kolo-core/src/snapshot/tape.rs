//! A parsed YAML document as a flat list of events (a "tape"), and a serde
//! `Deserializer` that reads typed objects straight from it.
//!
//! The block-YAML reader ([`super::block_yaml`]) writes a tape rather than a
//! `serde_json::Value`: scalars stay borrowed slices of the input where the
//! text needs no unescaping, and a whole object is one `Vec`. Deserializing a
//! `Pod` from the tape then skips building (and freeing) a `Value` tree of
//! small strings and maps, which was most of the cost of loading a YAML dump.
//!
//! The deserializer behaves like `serde_json::Value`'s: the same visitor
//! calls for the same data, so an object decodes identically whichever way
//! it came in (a test checks this on every kind the loader reads).

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde_json::{Number, Value};

/// One event of a [`Tape`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event<'a> {
    /// A mapping with `len` entries; its keys and values follow (each key a
    /// [`Event::Str`]), and `end` is the index just past its last event.
    Map { len: usize, end: usize },
    /// A sequence with `len` items following; `end` as for [`Event::Map`].
    Seq { len: usize, end: usize },
    /// A string (a key or a value).
    Str(Cow<'a, str>),
    /// `null`, `~` or nothing.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer or a finite float.
    Number(Number),
}

/// A parsed document: its root node starts at index 0.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tape<'a> {
    pub(crate) events: Vec<Event<'a>>,
}

impl<'a> Tape<'a> {
    /// The node at `at` as a `serde_json::Value`, read through the same
    /// deserializer typed objects use (so the differential tests against
    /// serde-saphyr check that deserializer too).
    pub(crate) fn value_at(&self, at: usize) -> Value {
        Value::deserialize(self.node(at)).expect("every tape event has a JSON value")
    }

    /// The tape's events, emptied, to be reused for another document.
    pub(crate) fn into_buffer(self) -> Vec<Event<'a>> {
        let mut events = self.events;
        events.clear();
        events
    }

    /// The index of the value of `key` in the mapping at `at`, if it is a
    /// mapping with that key.
    pub(crate) fn get(&self, at: usize, key: &str) -> Option<usize> {
        let Event::Map { len, .. } = self.events[at] else {
            return None;
        };
        let mut next = at + 1;
        for _ in 0..len {
            if matches!(&self.events[next], Event::Str(k) if k == key) {
                return Some(next + 1);
            }
            next = skip(&self.events, next + 1);
        }
        None
    }

    /// The string at `at`, if it is one.
    pub(crate) fn str_at(&self, at: usize) -> Option<&str> {
        match &self.events[at] {
            Event::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The number of items of the sequence at `at`, if it is one.
    pub(crate) fn len_at(&self, at: usize) -> Option<usize> {
        match self.events[at] {
            Event::Seq { len, .. } => Some(len),
            _ => None,
        }
    }

    /// Whether the node at `at` is a mapping.
    pub(crate) fn is_map_at(&self, at: usize) -> bool {
        matches!(self.events[at], Event::Map { .. })
    }

    /// A deserializer for the node at `at`.
    pub(crate) fn node(&self, at: usize) -> NodeDeserializer<'_> {
        NodeDeserializer { events: &self.events, at }
    }
}

/// The index just past the node that starts at `at`.
fn skip(events: &[Event<'_>], at: usize) -> usize {
    match events[at] {
        Event::Map { end, .. } | Event::Seq { end, .. } => end,
        _ => at + 1,
    }
}

/// The deserializer's error: serde's plain message error.
pub(crate) type Error = de::value::Error;

/// Deserializes the node at one index of a tape.
#[derive(Clone, Copy)]
pub(crate) struct NodeDeserializer<'de> {
    events: &'de [Event<'de>],
    at: usize,
}

impl<'de> NodeDeserializer<'de> {
    fn event(&self) -> &'de Event<'de> {
        &self.events[self.at]
    }
}

impl<'de> de::Deserializer<'de> for NodeDeserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.event() {
            Event::Map { len, .. } => {
                let mut access = Entries { events: self.events, next: self.at + 1, left: *len };
                let value = visitor.visit_map(&mut access)?;
                access.finish(*len)?;
                Ok(value)
            }
            Event::Seq { len, .. } => {
                let mut access = Entries { events: self.events, next: self.at + 1, left: *len };
                let value = visitor.visit_seq(&mut access)?;
                access.finish(*len)?;
                Ok(value)
            }
            Event::Str(s) => visit_str(s, visitor),
            Event::Null => visitor.visit_unit(),
            Event::Bool(b) => visitor.visit_bool(*b),
            // As serde_json's `Number` dispatches: unsigned, then signed,
            // then float.
            Event::Number(n) => {
                if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.event() {
            Event::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.event() {
            // A unit variant by name.
            Event::Str(s) => visitor.visit_enum(s.as_ref().into_deserializer()),
            // `{variant: value}`.
            Event::Map { len: 1, .. } => visitor.visit_enum(Variant {
                key: NodeDeserializer { at: self.at + 1, ..self },
                value: NodeDeserializer { at: self.at + 2, ..self },
            }),
            Event::Map { .. } => Err(de::Error::invalid_value(
                de::Unexpected::Map,
                &"a map with a single key (an enum variant)",
            )),
            _ => Err(de::Error::invalid_type(self.unexpected(), &"a string or a map (an enum)")),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        // The caller moves past the whole node by its index.
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier
    }
}

impl<'de> NodeDeserializer<'de> {
    fn unexpected(&self) -> de::Unexpected<'de> {
        match self.event() {
            Event::Map { .. } => de::Unexpected::Map,
            Event::Seq { .. } => de::Unexpected::Seq,
            Event::Str(s) => de::Unexpected::Str(match s {
                Cow::Borrowed(s) => s,
                Cow::Owned(s) => s.as_str(),
            }),
            Event::Null => de::Unexpected::Unit,
            Event::Bool(b) => de::Unexpected::Bool(*b),
            Event::Number(_) => de::Unexpected::Other("number"),
        }
    }
}

fn visit_str<'de, V: Visitor<'de>>(s: &'de Cow<'de, str>, visitor: V) -> Result<V::Value, Error> {
    match s {
        Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
        // Owned strings live in the tape, which outlives the deserializer.
        Cow::Owned(s) => visitor.visit_borrowed_str(s.as_str()),
    }
}

/// The entries of a mapping (key, value, key, value, ...) or the items of a
/// sequence.
struct Entries<'de> {
    events: &'de [Event<'de>],
    /// The index of the next key or item.
    next: usize,
    /// Entries or items not yet read.
    left: usize,
}

impl Entries<'_> {
    /// As serde_json: a visitor that stops early is an error.
    fn finish(&self, len: usize) -> Result<(), Error> {
        if self.left == 0 { Ok(()) } else { Err(de::Error::invalid_length(len, &"fewer elements")) }
    }

    fn take_node(&mut self) -> usize {
        let at = self.next;
        self.next = skip(self.events, at);
        at
    }
}

impl<'de> de::MapAccess<'de> for Entries<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let at = self.take_node();
        seed.deserialize(NodeDeserializer { events: self.events, at }).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let at = self.take_node();
        seed.deserialize(NodeDeserializer { events: self.events, at })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

impl<'de> de::SeqAccess<'de> for Entries<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let at = self.take_node();
        seed.deserialize(NodeDeserializer { events: self.events, at }).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// An enum written as `{variant: value}`.
struct Variant<'de> {
    key: NodeDeserializer<'de>,
    value: NodeDeserializer<'de>,
}

impl<'de> de::EnumAccess<'de> for Variant<'de> {
    type Error = Error;
    type Variant = NodeDeserializer<'de>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), Error> {
        Ok((seed.deserialize(self.key)?, self.value))
    }
}

impl<'de> de::VariantAccess<'de> for NodeDeserializer<'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.event() {
            Event::Null => Ok(()),
            _ => Err(de::Error::invalid_type(self.unexpected(), &"unit variant")),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        match self.event() {
            Event::Seq { .. } => de::Deserializer::deserialize_any(self, visitor),
            _ => Err(de::Error::invalid_type(self.unexpected(), &"tuple variant")),
        }
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.event() {
            Event::Map { .. } => de::Deserializer::deserialize_any(self, visitor),
            _ => Err(de::Error::invalid_type(self.unexpected(), &"struct variant")),
        }
    }
}
