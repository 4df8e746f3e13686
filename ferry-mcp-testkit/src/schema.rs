//! The compact JSON Schemas ferry freezes, derived from the types the tools parse and answer.
//!
//! A tool's `inputSchema` and `outputSchema` are frozen `&'static` texts (the `tools/list` bytes
//! must never change on their own, T8 in docs/mcp-budgets.md), but its arguments are a typed value (a serde enum
//! tagged by `action`) and its answer a typed struct. A test of each tool derives the types'
//! schemas with `schemars` ([`input_schema`], [`output_schema`]), compacts them with [`compact`]
//! and holds the result equal to the frozen texts, so the definition and the parser never drift.
//!
//! # The transform
//! Derive with [`settings`]: `SchemaSettings::draft2020_12()` without `$schema`
//! (`meta_schema = None`) and with every subschema inlined (`inline_subschemas = true`); an
//! answer type is derived for serializing ([`output_schema`]: a field that is skipped when
//! empty is then not required). `$ref`s into `$defs` are followed all the same, so the schema
//! of plain `schemars::schema_for!` compacts too. [`compact`] then keeps only what the model
//! needs to call a tool right:
//!
//! - **An internally tagged enum** (a `oneOf`/`anyOf` of object variants that all give one
//!   property a `const`, or a one-value `enum`: the tag) becomes one flat object:
//!   `{"type":"object","properties":{<tag>:{"enum":[<variants in order>]}, <every other
//!   property of any variant, once>},"required":[<tag>],"additionalProperties":false}`. Which
//!   fields each action needs is the parser's business (it names a missing one), not the
//!   schema's. A property that two variants type differently cannot be flattened: a panic
//!   names it.
//! - **A struct** (`"type":"object"` with `properties`) becomes
//!   `{"type":"object","properties":{...},"additionalProperties":false}`, plus `"required"`
//!   listing the fields schemars requires (neither an `Option` nor skipped when serializing),
//!   in declaration order, when there are any.
//! - **Each property** is described by its type only: `{"type":"string"}`, `"integer"`,
//!   `"number"`, `"boolean"`, and nested objects and arrays only as `{"type":"object"}` and
//!   `{"type":"array"}`; a string enum (a unit enum, or `const` alternatives) as
//!   `{"enum":[...]}` (in variant order; schemars lists documented variants after the others,
//!   so keep doc comments off the variants of an argument enum); a value of any type (`serde_json::Value`, the `true` schema) as `{}`.
//!   The `null` alternative of an `Option` (in `type`, `enum` or an `anyOf`) is dropped, and so
//!   is everything else: `$schema`, `title`, `description`, `format`, `default`, `minimum`...
//!
//! Property order: the tag first, then each property where it first appears (variants in
//! order). Within one variant or struct schemars gives properties sorted by name (serde_json's
//! map is sorted: `preserve_order` is never enabled in this workspace), so a frozen text may
//! order them differently: compare [`compact`] with the frozen text as JSON values.
//! [`compact_text`] is the same schema as one line of compact JSON, in the order above.

use ferry_mcp_core::registry::{RegistryError, Surface};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

/// The settings schemas are derived with (see the module docs).
pub fn settings() -> SchemaSettings {
    let mut settings = SchemaSettings::draft2020_12();
    settings.meta_schema = None;
    settings.inline_subschemas = true;
    settings
}

/// The schema of arguments a tool parses (`T: Deserialize`).
pub fn input_schema<T: JsonSchema>() -> Schema {
    settings().into_generator().into_root_schema_for::<T>()
}

/// The schema of an answer a tool serializes (`T: Serialize`): fields skipped when empty are
/// not required.
pub fn output_schema<T: JsonSchema>() -> Schema {
    settings()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
}

/// The compact schema of `schema` as a JSON value (see the module docs). Panics, naming the
/// part, on a schema that is neither a struct nor an internally tagged enum.
pub fn compact(schema: &Schema) -> Value {
    serde_json::from_str(&compact_text(schema)).expect("compact_text writes JSON")
}

/// The compact schema of `schema` as one line of compact JSON, properties in the order of the
/// module docs.
pub fn compact_text(schema: &Schema) -> String {
    let root = schema.as_value();
    let defs = root
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let resolver = Resolver { defs };
    let root = resolver.resolve(root);
    let object = Flat::of(&resolver, root);
    object.to_text()
}

/// Follows `#/$defs/<name>` references.
struct Resolver {
    defs: Map<String, Value>,
}

impl Resolver {
    fn resolve<'a>(&'a self, schema: &'a Value) -> &'a Value {
        let mut schema = schema;
        for _ in 0..32 {
            let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
                return schema;
            };
            let name = reference
                .strip_prefix("#/$defs/")
                .unwrap_or_else(|| panic!("cannot follow $ref {reference:?}"));
            schema = self
                .defs
                .get(name)
                .unwrap_or_else(|| panic!("$ref {reference:?} names no definition"));
        }
        panic!("$ref chain too deep")
    }

    /// The alternatives of an `anyOf`/`oneOf`, without `null` ones.
    fn alternatives<'a>(&'a self, schema: &'a Value) -> Option<Vec<&'a Value>> {
        let list = schema
            .get("oneOf")
            .or_else(|| schema.get("anyOf"))?
            .as_array()?;
        Some(
            list.iter()
                .map(|alternative| self.resolve(alternative))
                .filter(|alternative| !is_null(alternative))
                .collect(),
        )
    }

    /// A property's type only (see the module docs).
    fn property(&self, name: &str, schema: &Value) -> Value {
        let schema = self.resolve(schema);
        if schema == &Value::Bool(true) || schema.as_object().is_some_and(Map::is_empty) {
            return Value::Object(Map::new());
        }
        if let Some(values) = enum_values(schema) {
            return single("enum", Value::Array(values));
        }
        if let Some(types) = schema.get("type") {
            let types: Vec<&Value> = match types {
                Value::Array(types) => types.iter().filter(|t| *t != "null").collect(),
                other => vec![other],
            };
            return match types.as_slice() {
                [one] => single("type", (*one).clone()),
                _ => panic!("property {name:?} has several types: {schema}"),
            };
        }
        if let Some(alternatives) = self.alternatives(schema) {
            if let [one] = alternatives.as_slice() {
                return self.property(name, one);
            }
            // A unit enum whose variants carry doc comments is a oneOf of `const`s.
            let values: Option<Vec<Vec<Value>>> =
                alternatives.iter().map(|a| enum_values(a)).collect();
            if let Some(values) = values {
                return single("enum", Value::Array(values.concat()));
            }
            let types: Vec<Value> = alternatives
                .iter()
                .map(|alternative| self.property(name, alternative))
                .collect();
            if types.windows(2).all(|pair| pair[0] == pair[1]) {
                return types[0].clone();
            }
            panic!("property {name:?} has alternatives of several types: {schema}");
        }
        panic!("property {name:?} has no type to compact: {schema}")
    }
}

fn single(key: &str, value: Value) -> Value {
    let mut map = Map::new();
    map.insert(key.to_owned(), value);
    Value::Object(map)
}

/// `{"type":"null"}` or `{"const":null}`.
fn is_null(schema: &Value) -> bool {
    schema.get("type").is_some_and(|t| t == "null") || schema.get("const") == Some(&Value::Null)
}

/// The non-null values of a `const` or an `enum`.
fn enum_values(schema: &Value) -> Option<Vec<Value>> {
    if let Some(value) = schema.get("const") {
        return Some(vec![value.clone()]).filter(|_| !value.is_null());
    }
    let values = schema.get("enum")?.as_array()?;
    Some(values.iter().filter(|v| !v.is_null()).cloned().collect())
}

/// The compact object schema, properties in order.
struct Flat {
    properties: Vec<(String, Value)>,
    required: Vec<String>,
}

impl Flat {
    fn of(resolver: &Resolver, root: &Value) -> Self {
        if let Some(variants) = resolver.alternatives(root) {
            return Self::tagged(resolver, &variants, root);
        }
        // A struct without fields (a tool without arguments) has no `properties` at all.
        let no_fields = serde_json::Map::new();
        let properties = match root.get("properties").and_then(Value::as_object) {
            Some(properties) => properties,
            None if root.get("type") == Some(&Value::from("object")) => &no_fields,
            None => panic!("neither a struct nor an internally tagged enum: {root}"),
        };
        let required = root
            .get("required")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Self {
            properties: properties
                .iter()
                .map(|(name, schema)| (name.clone(), resolver.property(name, schema)))
                .collect(),
            required,
        }
    }

    /// An internally tagged enum, flattened.
    fn tagged(resolver: &Resolver, variants: &[&Value], root: &Value) -> Self {
        let properties_of = |variant: &Value| -> Map<String, Value> {
            variant
                .get("properties")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_else(|| panic!("an enum variant that is not an object: {variant}"))
        };
        let first = properties_of(variants[0]);
        let tag = first
            .iter()
            .map(|(name, _)| name)
            .find(|name| {
                variants.iter().all(|variant| {
                    properties_of(variant)
                        .get(*name)
                        .and_then(enum_values)
                        .is_some_and(|values| values.len() == 1)
                })
            })
            .unwrap_or_else(|| panic!("no tag property common to every variant: {root}"))
            .clone();
        let mut values = Vec::new();
        let mut properties: Vec<(String, Value)> = Vec::new();
        for variant in variants {
            for (name, schema) in properties_of(variant) {
                if name == tag {
                    values.extend(enum_values(&schema).unwrap_or_default());
                    continue;
                }
                let compacted = resolver.property(&name, &schema);
                match properties.iter().find(|(known, _)| *known == name) {
                    Some((_, known)) if *known != compacted => panic!(
                        "property {name:?} is {known} in one variant and {compacted} in another"
                    ),
                    Some(_) => {}
                    None => properties.push((name, compacted)),
                }
            }
        }
        properties.insert(0, (tag.clone(), single("enum", Value::Array(values))));
        Self {
            properties,
            required: vec![tag],
        }
    }

    fn to_text(&self) -> String {
        let quote = |text: &str| Value::from(text).to_string();
        let properties: Vec<String> = self
            .properties
            .iter()
            .map(|(name, schema)| format!("{}:{schema}", quote(name)))
            .collect();
        let mut text = if properties.is_empty() {
            // `{}`-shaped arguments: the MCP form of "no parameters".
            r#"{"type":"object""#.to_owned()
        } else {
            format!(
                r#"{{"type":"object","properties":{{{}}}"#,
                properties.join(",")
            )
        };
        if !self.required.is_empty() {
            let required: Vec<String> = self.required.iter().map(|name| quote(name)).collect();
            text.push_str(&format!(r#","required":[{}]"#, required.join(",")));
        }
        text.push_str(r#","additionalProperties":false}"#);
        text
    }
}

fn frozen(text: &str) -> Value {
    assert!(!text.contains(['\n', '\r']), "a frozen schema is one line");
    serde_json::from_str(text).expect("the frozen schema is JSON")
}

/// Panics unless the frozen `inputSchema` of `definition` is the one derived from `Args` (after
/// the compacting transform): the definition and the parser can never drift apart.
pub fn assert_input_frozen<Args: JsonSchema>(definition: &ferry_mcp_core::tool::ToolDefinition) {
    assert_eq!(
        compact(&input_schema::<Args>()),
        frozen(definition.input_schema),
        "{}: the frozen inputSchema differs from the derived one",
        definition.name
    );
}

/// Compiles every frozen input and output schema of `surface` as JSON Schema, as a client's
/// validator would, and names the first that is not valid. (The server itself reads only the
/// compact subset of its input schemas, `registry::arguments`, and compiles none.)
pub fn check_compiles(surface: &Surface) -> Result<(), RegistryError> {
    for tool in surface.tools() {
        let definition = tool.definition();
        let schemas = [
            ("inputSchema", Some(definition.input_schema)),
            ("outputSchema", definition.output_schema),
        ];
        for (which, text) in schemas {
            let Some(text) = text else { continue };
            let bad = |reason: String| RegistryError::BadSchema {
                tool: definition.name,
                which,
                reason,
            };
            let schema: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
            jsonschema::validator_for(&schema).map_err(|e| bad(e.to_string()))?;
        }
    }
    Ok(())
}

/// Panics unless `definition` has an `outputSchema` and it is the one derived from `Out`.
pub fn assert_output_frozen<Out: JsonSchema>(definition: &ferry_mcp_core::tool::ToolDefinition) {
    let output = definition
        .output_schema
        .expect("the tool has an outputSchema");
    assert_eq!(
        compact(&output_schema::<Out>()),
        frozen(output),
        "{}: the frozen outputSchema differs from the derived one",
        definition.name
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Colour {
        Red,
        Blue,
    }

    /// Arguments of a small tool.
    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
    #[allow(dead_code)]
    enum Args {
        /// Lists things.
        List {
            #[serde(default)]
            since: Option<String>,
            #[serde(default)]
            limit: Option<u32>,
        },
        Paint {
            /// What to paint.
            id: String,
            colour: Colour,
            #[serde(default)]
            twice: bool,
        },
        Stop,
    }

    #[derive(Serialize, JsonSchema)]
    struct Nested {
        a: u8,
    }

    /// The answer of a small tool.
    #[derive(Serialize, JsonSchema)]
    struct Out {
        /// Always there.
        done: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        rows: Option<Vec<Nested>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        nested: Option<Nested>,
        #[serde(skip_serializing_if = "Option::is_none")]
        colour: Option<Colour>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        more: bool,
        count: u64,
        anything: serde_json::Value,
    }

    #[test]
    fn a_tagged_enum_becomes_one_flat_object_with_the_tag_first_and_each_property_once() {
        let compacted = compact(&input_schema::<Args>());
        assert_eq!(
            compacted,
            json!({
                "type": "object",
                "properties": {
                    "op": {"enum": ["list", "paint", "stop"]},
                    "since": {"type": "string"},
                    "limit": {"type": "integer"},
                    "id": {"type": "string"},
                    "colour": {"enum": ["red", "blue"]},
                    "twice": {"type": "boolean"},
                },
                "required": ["op"],
                "additionalProperties": false,
            })
        );
        // The text is one line, in order: the tag, then first appearance (sorted within a
        // variant, as schemars gives them).
        assert_eq!(
            compact_text(&input_schema::<Args>()),
            r#"{"type":"object","properties":{"op":{"enum":["list","paint","stop"]},"limit":{"type":"integer"},"since":{"type":"string"},"colour":{"enum":["red","blue"]},"id":{"type":"string"},"twice":{"type":"boolean"}},"required":["op"],"additionalProperties":false}"#
        );
    }

    #[test]
    fn a_struct_keeps_types_only_and_requires_what_is_always_serialized() {
        let compacted = compact(&output_schema::<Out>());
        assert_eq!(
            compacted,
            json!({
                "type": "object",
                "properties": {
                    "done": {"type": "boolean"},
                    "rows": {"type": "array"},
                    "nested": {"type": "object"},
                    "colour": {"enum": ["red", "blue"]},
                    "more": {"type": "boolean"},
                    "count": {"type": "integer"},
                    "anything": {},
                },
                "required": ["done", "count", "anything"],
                "additionalProperties": false,
            })
        );
    }

    #[test]
    fn a_unit_enum_with_documented_variants_lists_the_undocumented_ones_first() {
        // schemars writes `oneOf: [{"enum": <undocumented>}, {"const": <documented>}...]`.
        #[derive(Serialize, JsonSchema)]
        #[serde(rename_all = "lowercase")]
        #[allow(dead_code)]
        enum Documented {
            /// The first.
            Red,
            Blue,
        }
        #[derive(Serialize, JsonSchema)]
        struct Paint {
            colour: Documented,
        }
        assert_eq!(
            compact(&output_schema::<Paint>())["properties"]["colour"],
            json!({"enum": ["blue", "red"]})
        );
    }

    #[test]
    fn a_struct_without_required_fields_has_no_required_list() {
        #[derive(Serialize, JsonSchema)]
        struct Sparse {
            #[serde(skip_serializing_if = "Option::is_none")]
            id: Option<String>,
        }
        assert_eq!(
            compact_text(&output_schema::<Sparse>()),
            r#"{"type":"object","properties":{"id":{"type":"string"}},"additionalProperties":false}"#
        );
    }

    #[test]
    fn the_default_schema_for_with_refs_and_meta_compacts_the_same() {
        let plain = schemars::schema_for!(Args);
        assert!(plain.get("$schema").is_some());
        assert_eq!(compact(&plain), compact(&input_schema::<Args>()));
    }

    #[test]
    #[should_panic(expected = "property \"x\" is")]
    fn a_property_typed_differently_in_two_variants_cannot_be_flattened() {
        #[derive(Deserialize, JsonSchema)]
        #[serde(tag = "op")]
        #[allow(dead_code)]
        enum Clash {
            A { x: String },
            B { x: u32 },
        }
        compact(&input_schema::<Clash>());
    }
}
