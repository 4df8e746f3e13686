//! Keys without a prefix of their own, told by the name they are given.
//!
//! Many services hand out keys that are bare hex, a UUID or plain letters and digits: a
//! Datadog API key is 32 hex digits, a Heroku key a UUID. Alone such a value is a commit id or
//! a request id; named after its service (`DATADOG_API_KEY=…`, `heroku_token: …`) it is that
//! service's key. One assignment pattern finds the name and the value ([`PATTERN`]); this table
//! says, per service, which shapes its keys have (the facts of gitleaks' default rules).

use std::sync::LazyLock;

use regex::Regex;

use super::SecretKind;

/// One service: the words its keys are named with, the kind they are, their shapes.
struct Service {
    names: &'static [&'static str],
    kind: SecretKind,
    /// Whole-value patterns, compared without regard to case as the services' docs print
    /// them in either.
    shapes: &'static [&'static str],
}

const UUID: &str = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

const SERVICES: &[Service] = &[
    Service {
        names: &["datadog", "dd_api", "dd_app", "dd-api", "dd-app"],
        kind: SecretKind::DatadogKey,
        shapes: &[r"[a-f0-9]{32}", r"[a-f0-9]{40}", r"[a-z0-9]{40}"],
    },
    Service {
        names: &["heroku"],
        kind: SecretKind::HerokuApiKey,
        shapes: &[UUID, r"HRKU-AA[0-9a-z_-]{58}"],
    },
    Service {
        names: &["mailgun"],
        kind: SecretKind::MailgunKey,
        shapes: &[
            r"key-[a-f0-9]{32}",
            r"pubkey-[a-f0-9]{32}",
            r"[a-h0-9]{32}-[a-h0-9]{8}-[a-h0-9]{8}",
            r"[a-f0-9]{32}",
        ],
    },
    Service {
        names: &["vault"],
        kind: SecretKind::VaultToken,
        shapes: &[r"s\.[a-z0-9]{24}", r"hvs\.[a-z0-9_-]{90,120}"],
    },
    Service {
        names: &["adafruit"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9_-]{32}"],
    },
    Service {
        names: &["airtable"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"key[a-z0-9]{14}", r"pat[a-z0-9]{14}\.[a-f0-9]{64}"],
    },
    Service {
        names: &["algolia"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{32}"],
    },
    Service {
        names: &["alibaba", "aliyun"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{30}"],
    },
    Service {
        names: &["asana"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{32}", r"[0-9]/[0-9]{16}:[a-z0-9]{32}"],
    },
    Service {
        names: &["atlassian", "jira", "confluence"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{20}[a-f0-9]{4}"],
    },
    Service {
        names: &["beamer"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"b_[a-z0-9=_-]{44}"],
    },
    Service {
        names: &["bitbucket"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{32}", r"[a-z0-9=_-]{64}"],
    },
    Service {
        names: &["bittrex"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{32}"],
    },
    Service {
        names: &["cloudflare", "cf_api"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9_-]{40}", r"[a-f0-9]{37}"],
    },
    Service {
        names: &["codecov"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{32}", UUID],
    },
    Service {
        names: &["cohere", "co_api_key"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{40}"],
    },
    Service {
        names: &["coinbase"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9_-]{64}"],
    },
    Service {
        names: &["confluent"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{16}", r"[a-z0-9+/]{64}"],
    },
    Service {
        names: &["contentful"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9=_-]{43}", r"CFPAT-[a-z0-9_-]{43}"],
    },
    Service {
        names: &["droneci", "drone_"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{32}"],
    },
    Service {
        names: &["discord"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-f0-9]{64}", r"[a-z0-9=_-]{32}"],
    },
    Service {
        names: &["facebook", "fb_app", "fb_secret"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-f0-9]{32}", r"[0-9]{15,16}(?:\||%7C)[0-9a-z_-]{27,40}"],
    },
    Service {
        names: &["dropbox"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{15}", r"[a-z0-9]{11}AAAAAAAAAA[a-z0-9_=-]{43}"],
    },
    Service {
        names: &["etsy"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{24}"],
    },
    Service {
        names: &["fastly"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9=_-]{32}"],
    },
    Service {
        names: &[
            "finicity",
            "finnhub",
            "flickr",
            "nytimes",
            "nyt_",
            "newyorktimes",
            "new-york-times",
        ],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{20}", r"[a-z0-9=_-]{32}", r"[a-f0-9]{20}"],
    },
    Service {
        names: &["freshbooks"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{64}"],
    },
    Service {
        names: &["gitter"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9_-]{40}"],
    },
    Service {
        names: &["gocardless"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"live_[a-z0-9_=-]{40}"],
    },
    Service {
        names: &["hubspot"],
        kind: SecretKind::ServiceKey,
        shapes: &[UUID, r"pat-(?:na|eu)[0-9]-[0-9a-f-]{36}"],
    },
    Service {
        names: &["jfrog", "artifactory", "bintray", "xray"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{73}", r"[a-z0-9]{64}"],
    },
    Service {
        names: &["kraken"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9/=_+-]{80,90}"],
    },
    Service {
        names: &["kucoin"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-f0-9]{24}", UUID],
    },
    Service {
        names: &["launchdarkly"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"(?:api|sdk|mob)-[0-9a-f-]{36}", r"[a-z0-9=_-]{40}"],
    },
    Service {
        names: &["linkedin"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{16}", r"[a-z0-9]{14}"],
    },
    Service {
        names: &["lob_", "lob.", "lob-"],
        kind: SecretKind::ServiceKey,
        shapes: &[
            r"(?:live|test)_[a-f0-9]{35}",
            r"(?:test|live)_pub_[a-f0-9]{31}",
        ],
    },
    Service {
        names: &["looker"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{20}", r"[a-z0-9]{24}"],
    },
    Service {
        names: &["mapbox"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"(?:pk|sk)\.[a-z0-9]{60}\.[a-z0-9_-]{22}"],
    },
    Service {
        names: &["mattermost"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{26}"],
    },
    Service {
        names: &["meraki"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[0-9a-f]{40}"],
    },
    Service {
        names: &["messagebird", "message_bird"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{25}"],
    },
    Service {
        names: &["netlify"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9=_-]{40,46}", r"nfp_[a-z0-9]{36}"],
    },
    Service {
        names: &["okta"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"00[a-z0-9=_-]{40}"],
    },
    Service {
        names: &["plaid"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{24}", r"[a-z0-9]{30}"],
    },
    Service {
        names: &["rapidapi"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9_-]{50}"],
    },
    Service {
        names: &["sendbird"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-f0-9]{40}", UUID],
    },
    Service {
        names: &["sentry"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-f0-9]{64}", r"[a-f0-9]{32}"],
    },
    Service {
        names: &["snyk"],
        kind: SecretKind::ServiceKey,
        shapes: &[UUID],
    },
    Service {
        names: &["squarespace"],
        kind: SecretKind::ServiceKey,
        shapes: &[UUID],
    },
    Service {
        names: &["sumo"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"su[a-z0-9]{12}", r"[a-z0-9]{64}"],
    },
    Service {
        names: &["travis"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{22}"],
    },
    Service {
        names: &["twitch"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{30}"],
    },
    Service {
        names: &["twitter"],
        kind: SecretKind::ServiceKey,
        shapes: &[
            r"[a-z0-9]{25}",
            r"[a-z0-9]{50}",
            r"[0-9]{15,25}-[a-z0-9]{20,40}",
            r"A{22}[a-z0-9%]{80,100}",
        ],
    },
    Service {
        names: &["intercom"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9=_-]{60}"],
    },
    Service {
        names: &["linear"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-f0-9]{32}"],
    },
    Service {
        names: &["new_relic", "new-relic", "newrelic"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{64}"],
    },
    Service {
        names: &["privateai", "private_ai", "private-ai"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{32}"],
    },
    Service {
        names: &[
            "sonar_token",
            "sonar.token",
            "sonar-token",
            "sonar_login",
            "sonar.login",
            "sonar-login",
        ],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9=_-]{40}"],
    },
    Service {
        names: &["sourcegraph"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-f0-9]{40}"],
    },
    Service {
        names: &["zendesk"],
        kind: SecretKind::ServiceKey,
        shapes: &[r"[a-z0-9]{40}"],
    },
];

/// The name of a service among a key's words, then a value: `DATADOG_API_KEY=…`,
/// `"heroku_token": "…"`, `mailgun.key: …`. No counted repetition: the shapes check the
/// value's length, and the pattern stays small enough for a fast automaton.
pub(super) const PATTERN: &str = concat!(
    r#"(?i)(?P<k>[A-Za-z0-9_.-]*(?:datadog|dd_api|dd_app|dd-api|dd-app|heroku|mailgun|vault|adafruit|airtable|algolia|alibaba|aliyun|asana|atlassian|jira|confluence|beamer|bitbucket|bittrex|cloudflare|cf_api|codecov|cohere|co_api_key|coinbase|confluent|contentful|droneci|drone_|discord|facebook|fb_app|fb_secret|dropbox|etsy|fastly|finicity|finnhub|flickr|nytimes|nyt_|newyorktimes|new-york-times|freshbooks|gitter|gocardless|hubspot|jfrog|artifactory|bintray|xray|kraken|kucoin|launchdarkly|linkedin|lob[_.-]|looker|mapbox|mattermost|meraki|messagebird|message_bird|netlify|okta|plaid|rapidapi|sendbird|sentry|snyk|squarespace|sumo|travis|twitch|twitter|intercom|linear|new_relic|new-relic|newrelic|privateai|private_ai|private-ai|sonar_token|sonar.token|sonar-token|sonar_login|sonar.login|sonar-login|sourcegraph|zendesk)[A-Za-z0-9_.-]*)"#,
    r#"["']?[ \t]*(?::=|=>|\|\||[:=,>])[ \t]*["'`]?(?P<s>[A-Za-z0-9_=+/.%~-]+)"#
);

/// The service names alone, for the guard's first pass.
pub(super) const TRIGGER: &str = "datadog|dd_api|dd_app|dd-api|dd-app|heroku|mailgun|vault|adafruit|airtable|algolia|alibaba|aliyun|asana|atlassian|jira|confluence|beamer|bitbucket|bittrex|cloudflare|cf_api|codecov|cohere|co_api_key|coinbase|confluent|contentful|droneci|drone_|discord|facebook|fb_app|fb_secret|dropbox|etsy|fastly|finicity|finnhub|flickr|nytimes|nyt_|newyorktimes|new-york-times|freshbooks|gitter|gocardless|hubspot|jfrog|artifactory|bintray|xray|kraken|kucoin|launchdarkly|linkedin|lob_|lob.|lob-|looker|mapbox|mattermost|meraki|messagebird|message_bird|netlify|okta|plaid|rapidapi|sendbird|sentry|snyk|squarespace|sumo|travis|twitch|twitter|intercom|linear|new_relic|new-relic|newrelic|privateai|private_ai|private-ai|sonar_token|sonar.token|sonar-token|sonar_login|sonar.login|sonar-login|sourcegraph|zendesk";

struct Compiled {
    /// Per service, its shapes as whole-value patterns.
    shapes: Vec<Regex>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| Compiled {
    shapes: SERVICES
        .iter()
        .map(|s| {
            let any = s.shapes.join("|");
            Regex::new(&format!("(?i)^(?:{any})$")).expect("the service shapes compile")
        })
        .collect(),
});

/// The kind of `value` if `key` names a service whose keys have its shape.
pub(super) fn service_key(key: &str, value: &str) -> Option<SecretKind> {
    let key = key.to_ascii_lowercase();
    let compiled = &*COMPILED;
    SERVICES
        .iter()
        .zip(&compiled.shapes)
        .find(|(service, shape)| {
            service.names.iter().any(|n| key.contains(n)) && shape.is_match(value)
        })
        .map(|(service, _)| service.kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_service_shape_compiles() {
        assert_eq!(COMPILED.shapes.len(), SERVICES.len());
        regex::Regex::new(PATTERN).expect("the service pattern compiles");
    }

    #[test]
    fn a_value_counts_only_with_its_services_shape() {
        let hex32 = "3f9c2a7be01d44c5a8f6b2e9d07c1a5e";
        assert_eq!(
            service_key("DATADOG_API_KEY", hex32),
            Some(SecretKind::DatadogKey)
        );
        assert_eq!(service_key("DATADOG_API_KEY", "not-a-key"), None);
        assert_eq!(service_key("REQUEST_ID", hex32), None);
    }
}
