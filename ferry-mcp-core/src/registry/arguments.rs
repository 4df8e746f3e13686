//! The check of a tool call's arguments against the tool's frozen `inputSchema`, before the
//! tool runs.
//!
//! Frozen input schemas are compact on purpose (see `ferry_mcp_testkit::schema`): one object of
//! named properties, each described by its `type` or its `enum`, a `required` list and
//! `"additionalProperties": false` (absent, other fields are let through, as JSON Schema says),
//! plus length and range bounds. So a full JSON Schema validator
//! is not needed to hold a call to them: this module reads that subset when the surface is built
//! (a schema that uses any other keyword is refused then, naming it, so nothing is silently left
//! unchecked) and checks each call in one pass over its arguments. ADR 0014 weighs this against
//! compiling the schemas with `jsonschema` at run time.
//!
//! What depends on the action (`ferry_orders {"action":"claim"}` needs `id`) is the tool's typed
//! parser's business: a serde enum tagged by `action` names the missing field.

use serde_json::{Map, Value};

/// The keywords a property schema may use.
const PROPERTY_KEYWORDS: [&str; 8] = [
    "type",
    "enum",
    "description",
    "title",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
];

/// The keywords the object schema itself may use.
const OBJECT_KEYWORDS: [&str; 6] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "description",
    "title",
];

/// A property's JSON type, as `type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Integer,
    Number,
    Boolean,
    Object,
    Array,
}

impl Kind {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "string" => Self::String,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "boolean" => Self::Boolean,
            "object" => Self::Object,
            "array" => Self::Array,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
            Self::Object => "object",
            Self::Array => "array",
        }
    }

    fn admits(self, value: &Value) -> bool {
        match self {
            Self::String => value.is_string(),
            Self::Integer => value.is_i64() || value.is_u64(),
            Self::Number => value.is_number(),
            Self::Boolean => value.is_boolean(),
            Self::Object => value.is_object(),
            Self::Array => value.is_array(),
        }
    }
}

/// What one property admits.
#[derive(Debug, Clone, PartialEq)]
struct Property {
    name: String,
    kind: Option<Kind>,
    /// The values an `enum` allows, in schema order.
    choices: Option<Vec<Value>>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    /// The bounds as the schema writes them (so an error quotes `100`, not `100.0`).
    minimum: Option<Value>,
    maximum: Option<Value>,
}

/// A frozen input schema, read once: the properties a call may pass and those it must.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgumentSchema {
    properties: Vec<Property>,
    required: Vec<String>,
    /// `"additionalProperties": false`: a field that is not a property is refused.
    closed: bool,
}

impl ArgumentSchema {
    /// Admits any object: for a tool that checks its own arguments
    /// (`Tool::checks_own_arguments`).
    pub fn any_object() -> Self {
        Self {
            properties: Vec::new(),
            required: Vec::new(),
            closed: false,
        }
    }

    /// Reads an input schema of the compact subset; the error names the first keyword or
    /// value outside it.
    pub fn read(schema: &Value) -> Result<Self, String> {
        let object = schema.as_object().ok_or("not an object schema")?;
        if let Some(other) = object
            .keys()
            .find(|key| !OBJECT_KEYWORDS.contains(&key.as_str()))
        {
            return Err(format!("keyword `{other}` is not checked at call time"));
        }
        if object.get("type").and_then(Value::as_str) != Some("object") {
            return Err("not an object schema".into());
        }
        let closed = match object.get("additionalProperties") {
            None | Some(Value::Bool(true)) => false,
            Some(Value::Bool(false)) => true,
            Some(_) => return Err("`additionalProperties` is not true or false".into()),
        };
        let mut properties = Vec::new();
        if let Some(listed) = object.get("properties") {
            let listed = listed.as_object().ok_or("`properties` is not an object")?;
            for (name, schema) in listed {
                properties.push(read_property(name, schema)?);
            }
        }
        let mut required = Vec::new();
        if let Some(names) = object.get("required") {
            let names = names.as_array().ok_or("`required` is not an array")?;
            for name in names {
                let name = name.as_str().ok_or("`required` lists a non-string")?;
                if !properties.iter().any(|property| property.name == name) {
                    return Err(format!(
                        "`required` names `{name}`, which is not a property"
                    ));
                }
                required.push(name.to_owned());
            }
        }
        Ok(Self {
            properties,
            required,
            closed,
        })
    }

    /// The problems of `args`, at most `limit` of them, each naming its field: unknown fields
    /// first (in the call's order), then missing required ones, then values of the wrong type,
    /// choice, length or range.
    pub fn problems(&self, args: &Map<String, Value>, limit: usize) -> Vec<String> {
        let mut problems = Vec::new();
        for name in args.keys().filter(|_| self.closed) {
            if !self
                .properties
                .iter()
                .any(|property| &property.name == name)
            {
                problems.push(self.unknown(name));
            }
        }
        for name in &self.required {
            if !args.contains_key(name) {
                problems.push(format!("\"{name}\" is a required property"));
            }
        }
        for property in &self.properties {
            if let Some(value) = args.get(&property.name) {
                problems.extend(property.problem(value));
            }
        }
        problems.truncate(limit);
        problems
    }

    fn unknown(&self, name: &str) -> String {
        if self.properties.is_empty() {
            return format!("`{name}`: unknown field (this tool takes no arguments)");
        }
        let known: Vec<&str> = self
            .properties
            .iter()
            .map(|property| property.name.as_str())
            .collect();
        format!("`{name}`: unknown field (known: {})", known.join(", "))
    }
}

fn read_property(name: &str, schema: &Value) -> Result<Property, String> {
    let object = schema
        .as_object()
        .ok_or_else(|| format!("property `{name}` is not an object schema"))?;
    if let Some(other) = object
        .keys()
        .find(|key| !PROPERTY_KEYWORDS.contains(&key.as_str()))
    {
        return Err(format!(
            "property `{name}` uses keyword `{other}`, which is not checked at call time"
        ));
    }
    let kind = match object.get("type") {
        None => None,
        Some(Value::String(kind)) => {
            Some(Kind::parse(kind).ok_or_else(|| format!("property `{name}` has type `{kind}`"))?)
        }
        Some(_) => {
            return Err(format!(
                "property `{name}` has a `type` that is not one name"
            ));
        }
    };
    let choices = match object.get("enum") {
        None => None,
        Some(Value::Array(choices)) if !choices.is_empty() => Some(choices.clone()),
        Some(_) => {
            return Err(format!(
                "property `{name}` has an empty or non-array `enum`"
            ));
        }
    };
    let count = |keyword: &str| -> Result<Option<u64>, String> {
        object
            .get(keyword)
            .map(|value| {
                value
                    .as_u64()
                    .ok_or_else(|| format!("property `{name}`: `{keyword}` is not a count"))
            })
            .transpose()
    };
    let bound = |keyword: &str| -> Result<Option<Value>, String> {
        match object.get(keyword) {
            None => Ok(None),
            Some(value) if value.is_number() => Ok(Some(value.clone())),
            Some(_) => Err(format!("property `{name}`: `{keyword}` is not a number")),
        }
    };
    Ok(Property {
        name: name.to_owned(),
        kind,
        choices,
        min_length: count("minLength")?,
        max_length: count("maxLength")?,
        minimum: bound("minimum")?,
        maximum: bound("maximum")?,
    })
}

impl Property {
    fn problem(&self, value: &Value) -> Option<String> {
        let name = &self.name;
        if let Some(kind) = self.kind
            && !kind.admits(value)
        {
            return Some(format!(
                "`{name}`: {value} is not of type \"{}\"",
                kind.name()
            ));
        }
        if let Some(choices) = &self.choices
            && !choices.contains(value)
        {
            let listed: Vec<String> = choices.iter().map(Value::to_string).collect();
            return Some(format!(
                "`{name}`: {value} is not one of {}",
                listed.join(", ")
            ));
        }
        if let Some(text) = value.as_str() {
            let chars = text.chars().count() as u64;
            if self.min_length.is_some_and(|min| chars < min) {
                return Some(format!(
                    "`{name}`: {value} is shorter than {} characters",
                    self.min_length.unwrap_or_default()
                ));
            }
            if self.max_length.is_some_and(|max| chars > max) {
                return Some(format!(
                    "`{name}`: the text is longer than {} characters",
                    self.max_length.unwrap_or_default()
                ));
            }
        }
        if let Some(number) = value.as_f64() {
            if let Some(minimum) = exceeded(&self.minimum, |bound| number < bound) {
                return Some(format!(
                    "`{name}`: {value} is less than the minimum of {minimum}"
                ));
            }
            if let Some(maximum) = exceeded(&self.maximum, |bound| number > bound) {
                return Some(format!(
                    "`{name}`: {value} is greater than the maximum of {maximum}"
                ));
            }
        }
        None
    }
}

/// The bound, when there is one and `beyond` it is.
fn exceeded(bound: &Option<Value>, beyond: impl Fn(f64) -> bool) -> Option<&Value> {
    bound
        .as_ref()
        .filter(|bound| bound.as_f64().is_some_and(&beyond))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: Value) -> ArgumentSchema {
        ArgumentSchema::read(&value).unwrap()
    }

    fn problems(schema: &ArgumentSchema, args: Value) -> Vec<String> {
        let Value::Object(args) = args else {
            panic!("arguments are an object")
        };
        schema.problems(&args, 5)
    }

    #[test]
    fn a_call_that_fits_the_schema_has_no_problem() {
        let orders = schema(
            json!({"type":"object","properties":{"action":{"enum":["list","claim"]},"id":{"type":"string"}},"required":["action"],"additionalProperties":false}),
        );
        assert!(problems(&orders, json!({"action":"claim","id":"m3"})).is_empty());
        assert!(problems(&orders, json!({"action":"list"})).is_empty());
    }

    #[test]
    fn each_problem_names_its_field() {
        let orders = schema(
            json!({"type":"object","properties":{"action":{"enum":["list","claim"]},"id":{"type":"string"}},"required":["action"],"additionalProperties":false}),
        );
        assert_eq!(
            problems(&orders, json!({"x": 1, "id": 7})),
            [
                "`x`: unknown field (known: action, id)",
                "\"action\" is a required property",
                "`id`: 7 is not of type \"string\""
            ]
        );
        assert_eq!(
            problems(&orders, json!({"action": "grab"})),
            ["`action`: \"grab\" is not one of \"list\", \"claim\""]
        );
    }

    #[test]
    fn a_tool_without_arguments_refuses_any_by_name() {
        let join = schema(json!({"type":"object","additionalProperties":false}));
        assert_eq!(
            problems(&join, json!({"x": 1})),
            ["`x`: unknown field (this tool takes no arguments)"]
        );
    }

    #[test]
    fn lengths_count_characters_and_ranges_bound_numbers() {
        let bounded = schema(
            json!({"type":"object","properties":{"body":{"type":"string","minLength":1,"maxLength":3},"n":{"type":"integer","minimum":0,"maximum":100}},"additionalProperties":false}),
        );
        assert!(problems(&bounded, json!({"body": "héé", "n": 100})).is_empty());
        assert_eq!(
            problems(&bounded, json!({"body": "", "n": 101})),
            [
                "`body`: \"\" is shorter than 1 characters",
                "`n`: 101 is greater than the maximum of 100"
            ]
        );
        assert_eq!(
            problems(&bounded, json!({"body": "abcd", "n": -1})),
            [
                "`body`: the text is longer than 3 characters",
                "`n`: -1 is less than the minimum of 0"
            ]
        );
        assert_eq!(
            problems(&bounded, json!({"n": 1.5})),
            ["`n`: 1.5 is not of type \"integer\""]
        );
    }

    #[test]
    fn a_schema_that_does_not_close_its_properties_lets_other_fields_through() {
        let open = schema(json!({"type":"object","properties":{"a":{"type":"string"}}}));
        assert!(problems(&open, json!({"a": "x", "b": 1})).is_empty());
        assert_eq!(
            problems(&open, json!({"a": 1})),
            ["`a`: 1 is not of type \"string\""]
        );
    }

    #[test]
    fn at_most_the_limit_of_problems_is_named() {
        let none = schema(json!({"type":"object","additionalProperties":false}));
        let args = json!({"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7});
        assert_eq!(problems(&none, args).len(), 5);
    }

    #[test]
    fn a_schema_outside_the_checked_subset_is_refused_naming_the_keyword() {
        for (schema, error) in [
            (
                json!({"type":"object","oneOf":[],"additionalProperties":false}),
                "keyword `oneOf` is not checked at call time",
            ),
            (
                json!({"type":"object","properties":{"a":{"type":"string","pattern":"x"}},"additionalProperties":false}),
                "property `a` uses keyword `pattern`, which is not checked at call time",
            ),
            (
                json!({"type":"object","additionalProperties":{"type":"string"}}),
                "`additionalProperties` is not true or false",
            ),
            (
                json!({"type":"object","required":["a"],"additionalProperties":false}),
                "`required` names `a`, which is not a property",
            ),
            (json!({"type":"array"}), "not an object schema"),
        ] {
            assert_eq!(
                ArgumentSchema::read(&schema),
                Err(error.to_owned()),
                "{schema}"
            );
        }
    }
}
