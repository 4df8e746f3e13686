//! Secret shapes: one rule per format, each a pattern plus the check that tells the real
//! thing from a look-alike (a checksum, a decoded header, or at least "not a placeholder").
//!
//! All patterns run as one `RegexSet` first, so ordinary text costs one pass; only the rules
//! that matched are run again for their spans.

use std::fmt;
use std::ops::Range;
use std::sync::LazyLock;

use regex::{Captures, Regex, RegexSet};

use super::checksum;

/// The kinds of secret the guard knows, most specific first: when two spans overlap, the
/// merged span takes the earlier kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum SecretKind {
    /// A PEM private key (`-----BEGIN [RSA |EC |ENCRYPTED ]PRIVATE KEY-----` with its body).
    PrivateKey,
    /// An OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`).
    OpensshPrivateKey,
    /// An armored PGP private key block.
    PgpPrivateKey,
    /// An age identity (`AGE-SECRET-KEY-1…`, bech32 with its checksum).
    AgeSecretKey,
    /// A ferry key file's `"secret"`: the hex seed of an agent's or the master's key.
    FerrySecretKey,
    /// A GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`) whose CRC-32 checks out.
    GithubToken,
    /// A GitHub fine-grained personal access token (`github_pat_…`).
    GithubFineGrainedToken,
    /// A GitLab token (`glpat-`, `gldt-`, `glrt-`, …).
    GitlabToken,
    /// An Anthropic API key (`sk-ant-api03-…`).
    AnthropicApiKey,
    /// An OpenAI API key (`sk-…`, `sk-proj-…`, `sk-svcacct-…`).
    OpenAiApiKey,
    /// A Google API key (`AIza…`).
    GoogleApiKey,
    /// A Google OAuth client secret (`GOCSPX-…`) or access token (`ya29.…`).
    GoogleOauth,
    /// A Hugging Face token (`hf_…`).
    HuggingfaceToken,
    /// An AWS access key id (`AKIA…`, `ASIA…`).
    AwsAccessKeyId,
    /// An AWS secret access key, named as one or beside an access key id.
    AwsSecretAccessKey,
    /// A Slack token (`xoxb-`, `xoxp-`, `xapp-`, …).
    SlackToken,
    /// A Slack incoming webhook (`hooks.slack.com/services/…`).
    SlackWebhook,
    /// An npm token (`npm_…`) whose CRC-32 checks out.
    NpmToken,
    /// A PyPI upload token (`pypi-AgEIcHlwaS5vcmc…`).
    PypiToken,
    /// A Stripe secret or restricted key (`sk_live_`, `rk_live_`, …) or webhook secret.
    StripeKey,
    /// A Twilio API key (`SK` and 32 hex digits).
    TwilioApiKey,
    /// A Twilio auth token: 32 hex digits named as one or beside an account sid.
    TwilioAuthToken,
    /// A SendGrid API key (`SG.….…`).
    SendgridApiKey,
    /// A Discord bot token (base64 of the bot's id, a timestamp, an HMAC).
    DiscordBotToken,
    /// A Discord webhook URL.
    DiscordWebhook,
    /// A Telegram bot token (`<bot id>:AA…`).
    TelegramBotToken,
    /// A Shopify access token (`shpat_`, `shpss_`, …).
    ShopifyToken,
    /// A DigitalOcean token (`dop_v1_…`).
    DigitaloceanToken,
    /// An Azure storage or service bus key in a connection string (`AccountKey=…`).
    AzureStorageKey,
    /// A JSON Web Token (three base64url parts, a header with `alg`).
    Jwt,
    /// A database URL with a password (`postgres://user:pass@host`, mysql, mongodb+srv, …).
    DatabaseUrl,
    /// Another URL with a password in it (`https://user:pass@host`).
    UrlPassword,
    /// A random value after `Authorization: Bearer` (or `Basic`, `token`).
    BearerToken,
    /// An assignment like `API_KEY=…`, `SECRET: …`, `"password": "…"` of a random value.
    EnvSecret,
}

impl SecretKind {
    /// Every kind, in priority order.
    pub const ALL: [SecretKind; 34] = [
        Self::PrivateKey,
        Self::OpensshPrivateKey,
        Self::PgpPrivateKey,
        Self::AgeSecretKey,
        Self::FerrySecretKey,
        Self::GithubToken,
        Self::GithubFineGrainedToken,
        Self::GitlabToken,
        Self::AnthropicApiKey,
        Self::OpenAiApiKey,
        Self::GoogleApiKey,
        Self::GoogleOauth,
        Self::HuggingfaceToken,
        Self::AwsAccessKeyId,
        Self::AwsSecretAccessKey,
        Self::SlackToken,
        Self::SlackWebhook,
        Self::NpmToken,
        Self::PypiToken,
        Self::StripeKey,
        Self::TwilioApiKey,
        Self::TwilioAuthToken,
        Self::SendgridApiKey,
        Self::DiscordBotToken,
        Self::DiscordWebhook,
        Self::TelegramBotToken,
        Self::ShopifyToken,
        Self::DigitaloceanToken,
        Self::AzureStorageKey,
        Self::Jwt,
        Self::DatabaseUrl,
        Self::UrlPassword,
        Self::BearerToken,
        Self::EnvSecret,
    ];

    /// The stable snake_case name, for reports and `[redacted: <kind>]`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::PrivateKey => "private_key",
            Self::OpensshPrivateKey => "openssh_private_key",
            Self::PgpPrivateKey => "pgp_private_key",
            Self::AgeSecretKey => "age_secret_key",
            Self::FerrySecretKey => "ferry_secret_key",
            Self::GithubToken => "github_token",
            Self::GithubFineGrainedToken => "github_fine_grained_token",
            Self::GitlabToken => "gitlab_token",
            Self::AnthropicApiKey => "anthropic_api_key",
            Self::OpenAiApiKey => "openai_api_key",
            Self::GoogleApiKey => "google_api_key",
            Self::GoogleOauth => "google_oauth",
            Self::HuggingfaceToken => "huggingface_token",
            Self::AwsAccessKeyId => "aws_access_key_id",
            Self::AwsSecretAccessKey => "aws_secret_access_key",
            Self::SlackToken => "slack_token",
            Self::SlackWebhook => "slack_webhook",
            Self::NpmToken => "npm_token",
            Self::PypiToken => "pypi_token",
            Self::StripeKey => "stripe_key",
            Self::TwilioApiKey => "twilio_api_key",
            Self::TwilioAuthToken => "twilio_auth_token",
            Self::SendgridApiKey => "sendgrid_api_key",
            Self::DiscordBotToken => "discord_bot_token",
            Self::DiscordWebhook => "discord_webhook",
            Self::TelegramBotToken => "telegram_bot_token",
            Self::ShopifyToken => "shopify_token",
            Self::DigitaloceanToken => "digitalocean_token",
            Self::AzureStorageKey => "azure_storage_key",
            Self::Jwt => "jwt",
            Self::DatabaseUrl => "database_url",
            Self::UrlPassword => "url_password",
            Self::BearerToken => "bearer_token",
            Self::EnvSecret => "env_secret",
        }
    }

    /// The kind in words with its article, as the refusal says it ("a github token").
    pub const fn described(self) -> &'static str {
        match self {
            Self::PrivateKey => "a private key",
            Self::OpensshPrivateKey => "an openssh private key",
            Self::PgpPrivateKey => "a pgp private key",
            Self::AgeSecretKey => "an age secret key",
            Self::FerrySecretKey => "a ferry secret key",
            Self::GithubToken => "a github token",
            Self::GithubFineGrainedToken => "a github fine-grained token",
            Self::GitlabToken => "a gitlab token",
            Self::AnthropicApiKey => "an anthropic api key",
            Self::OpenAiApiKey => "an openai api key",
            Self::GoogleApiKey => "a google api key",
            Self::GoogleOauth => "a google oauth secret",
            Self::HuggingfaceToken => "a hugging face token",
            Self::AwsAccessKeyId => "an aws access key id",
            Self::AwsSecretAccessKey => "an aws secret access key",
            Self::SlackToken => "a slack token",
            Self::SlackWebhook => "a slack webhook url",
            Self::NpmToken => "an npm token",
            Self::PypiToken => "a pypi token",
            Self::StripeKey => "a stripe key",
            Self::TwilioApiKey => "a twilio api key",
            Self::TwilioAuthToken => "a twilio auth token",
            Self::SendgridApiKey => "a sendgrid api key",
            Self::DiscordBotToken => "a discord bot token",
            Self::DiscordWebhook => "a discord webhook url",
            Self::TelegramBotToken => "a telegram bot token",
            Self::ShopifyToken => "a shopify token",
            Self::DigitaloceanToken => "a digitalocean token",
            Self::AzureStorageKey => "an azure storage key",
            Self::Jwt => "a json web token",
            Self::DatabaseUrl => "a database url with a password",
            Self::UrlPassword => "a url with a password",
            Self::BearerToken => "a bearer token",
            Self::EnvSecret => "a secret assignment",
        }
    }
}

impl fmt::Display for SecretKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One secret-shaped span: its kind and its byte range in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretMatch {
    /// What the span looks like.
    pub kind: SecretKind,
    /// Where it is, in bytes; always on character boundaries.
    pub range: Range<usize>,
}

/// How a rule tells a real secret from a look-alike once its pattern matched.
#[derive(Debug, Clone, Copy)]
enum Check {
    /// The pattern is specific enough.
    Shape,
    /// The `b` group is not a placeholder and looks drawn at random.
    Plausible,
    /// The `b` group ends in GitHub's and npm's base62 CRC-32.
    Crc32Tail,
    /// The `b` group is a base64url header that decodes to JSON with `alg`.
    Jwt,
    /// The `b` group is base64 of a 17 to 20 digit Discord id.
    DiscordId,
    /// The whole match is valid bech32.
    Bech32,
    /// The `b` group is a password rather than a placeholder for one.
    Password,
    /// The `b` group (of `s`) looks like an AWS secret key.
    AwsSecret,
    /// The `s` group looks drawn at random (values typed after a keyword).
    RandomValue,
    /// An assignment: the `k` group names a secret and the `s` group looks random.
    Assignment,
    /// A PEM block: the body after the header must be there.
    Pem,
    /// An AWS access key id, and 40-character secrets near it.
    AwsId,
    /// A Twilio account sid (not itself secret) and 32-hex auth tokens near it.
    TwilioSid,
}

struct Rule {
    kind: SecretKind,
    check: Check,
    /// The span reported is the `s` group if the pattern has one, else the whole match.
    pattern: &'static str,
}

/// An ASCII word boundary (a Unicode one would keep the fast engines off non-ASCII text).
macro_rules! b {
    () => {
        r"(?-u:\b)"
    };
}

const RULES: &[Rule] = &[
    Rule {
        kind: SecretKind::PrivateKey,
        check: Check::Pem,
        pattern: r"-----BEGIN (?P<l>[A-Z0-9]+(?: [A-Z0-9]+)* )?PRIVATE KEY(?: BLOCK)?-----",
    },
    Rule {
        kind: SecretKind::AgeSecretKey,
        check: Check::Bech32,
        pattern: r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
    },
    Rule {
        kind: SecretKind::FerrySecretKey,
        check: Check::Shape,
        pattern: r#""secret"\s*:\s*"(?P<s>[0-9a-f]{64})""#,
    },
    Rule {
        kind: SecretKind::GithubToken,
        check: Check::Crc32Tail,
        pattern: concat!(b!(), r"gh[pousr]_(?P<b>[A-Za-z0-9]{36})", b!()),
    },
    // GitHub has published no checksum for these, so the shape and randomness decide: a
    // real token must never pass for want of a checksum we only guessed.
    Rule {
        kind: SecretKind::GithubFineGrainedToken,
        check: Check::Plausible,
        pattern: concat!(
            b!(),
            r"github_pat_(?P<b>[A-Za-z0-9]{22}_[A-Za-z0-9]{59})",
            b!()
        ),
    },
    Rule {
        kind: SecretKind::GitlabToken,
        check: Check::Plausible,
        pattern: concat!(
            b!(),
            r"gl(?:pat|dt|rt|ptt|ft|imt|soat|oas|cbt|agent|ffct)-(?P<b>[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+)*)"
        ),
    },
    Rule {
        kind: SecretKind::AnthropicApiKey,
        check: Check::Plausible,
        pattern: concat!(
            b!(),
            r"sk-ant-(?:api|admin|oat|ort|sid)[0-9]{2}-(?P<b>[A-Za-z0-9_-]{40,})"
        ),
    },
    Rule {
        kind: SecretKind::OpenAiApiKey,
        check: Check::Plausible,
        pattern: concat!(
            b!(),
            r"sk-(?:(?:proj|svcacct|admin|None)-)?(?P<b>[A-Za-z0-9_-]{32,})"
        ),
    },
    // `T3BlbkFJ` is base64 of "OpenAI": it marks a key even with its `sk-` prefix cut off.
    Rule {
        kind: SecretKind::OpenAiApiKey,
        check: Check::Plausible,
        pattern: r"(?P<b>[A-Za-z0-9_-]{20,74}T3BlbkFJ[A-Za-z0-9_-]{20,74})",
    },
    Rule {
        kind: SecretKind::GoogleApiKey,
        check: Check::Plausible,
        pattern: concat!(b!(), r"AIza(?P<b>[0-9A-Za-z_-]{35})"),
    },
    Rule {
        kind: SecretKind::GoogleOauth,
        check: Check::Plausible,
        pattern: concat!(b!(), r"GOCSPX-(?P<b>[A-Za-z0-9_-]{28})"),
    },
    Rule {
        kind: SecretKind::GoogleOauth,
        check: Check::Plausible,
        pattern: concat!(b!(), r"ya29\.(?P<b>[A-Za-z0-9_-]{50,})"),
    },
    Rule {
        kind: SecretKind::HuggingfaceToken,
        check: Check::Plausible,
        pattern: concat!(b!(), r"hf_(?P<b>[A-Za-z]{34})", b!()),
    },
    Rule {
        kind: SecretKind::AwsAccessKeyId,
        check: Check::AwsId,
        pattern: concat!(b!(), r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}", b!()),
    },
    Rule {
        kind: SecretKind::AwsSecretAccessKey,
        check: Check::AwsSecret,
        pattern: r#"(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)["']?\s*(?:[:=]|=>)?\s*["']?(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
    },
    Rule {
        kind: SecretKind::SlackToken,
        check: Check::Plausible,
        pattern: concat!(
            b!(),
            r"xox[abposre]-[0-9]{6,13}(?:-[0-9]{6,13}){0,2}-(?P<b>[A-Za-z0-9]{16,64})"
        ),
    },
    Rule {
        kind: SecretKind::SlackToken,
        check: Check::Plausible,
        pattern: concat!(
            b!(),
            r"xapp-[0-9]-[A-Z0-9]{8,12}-[0-9]{8,14}-(?P<b>[a-f0-9]{32,64})"
        ),
    },
    Rule {
        kind: SecretKind::SlackWebhook,
        check: Check::Plausible,
        pattern: r"https://hooks\.slack\.com/(?:services/T[A-Z0-9]{8,12}/B[A-Z0-9]{8,12}/(?P<b>[A-Za-z0-9]{24})|triggers/T[A-Z0-9]{8,12}/[0-9]{6,16}/[a-f0-9]{32})",
    },
    Rule {
        kind: SecretKind::NpmToken,
        check: Check::Crc32Tail,
        pattern: concat!(b!(), r"npm_(?P<b>[A-Za-z0-9]{36})", b!()),
    },
    Rule {
        kind: SecretKind::PypiToken,
        check: Check::Plausible,
        pattern: concat!(
            b!(),
            r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)(?P<b>[A-Za-z0-9_-]{50,})"
        ),
    },
    Rule {
        kind: SecretKind::StripeKey,
        check: Check::Plausible,
        pattern: concat!(
            b!(),
            r"(?:sk|rk)_(?:live|test)_(?P<b>[A-Za-z0-9]{24,247})",
            b!()
        ),
    },
    Rule {
        kind: SecretKind::StripeKey,
        check: Check::Plausible,
        pattern: concat!(b!(), r"whsec_(?P<b>[A-Za-z0-9+/]{32,}={0,2})"),
    },
    Rule {
        kind: SecretKind::TwilioApiKey,
        check: Check::Plausible,
        pattern: concat!(b!(), r"SK(?P<b>[0-9a-f]{32})", b!()),
    },
    Rule {
        kind: SecretKind::TwilioAuthToken,
        check: Check::Plausible,
        pattern: concat!(
            r#"(?i)twilio[A-Za-z0-9_.-]*?auth[_.-]?token["']?\s*[:=]\s*["']?(?P<s>[0-9a-f]{32})"#,
            b!()
        ),
    },
    Rule {
        kind: SecretKind::TwilioAuthToken,
        check: Check::TwilioSid,
        pattern: concat!(b!(), r"AC[0-9a-f]{32}", b!()),
    },
    Rule {
        kind: SecretKind::SendgridApiKey,
        check: Check::Plausible,
        pattern: concat!(b!(), r"SG\.(?P<b>[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})"),
    },
    Rule {
        kind: SecretKind::DiscordBotToken,
        check: Check::DiscordId,
        pattern: concat!(
            b!(),
            r"(?P<b>[MNO][A-Za-z0-9_-]{23,27})\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}"
        ),
    },
    Rule {
        kind: SecretKind::DiscordWebhook,
        check: Check::Plausible,
        pattern: r"https://(?:(?:canary|ptb)\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/(?P<b>[A-Za-z0-9_-]{60,68})",
    },
    Rule {
        kind: SecretKind::TelegramBotToken,
        check: Check::Plausible,
        pattern: concat!(b!(), r"[0-9]{8,10}:(?P<b>A[A-Za-z0-9_-]{34})"),
    },
    Rule {
        kind: SecretKind::ShopifyToken,
        check: Check::Plausible,
        pattern: concat!(b!(), r"shp(?:at|ca|pa|ss)_(?P<b>[a-fA-F0-9]{32})", b!()),
    },
    Rule {
        kind: SecretKind::DigitaloceanToken,
        check: Check::Plausible,
        pattern: concat!(b!(), r"do[opr]_v1_(?P<b>[a-f0-9]{64})", b!()),
    },
    Rule {
        kind: SecretKind::AzureStorageKey,
        check: Check::Plausible,
        pattern: r"(?i)(?:AccountKey|SharedAccessKey)=(?P<s>(?-i:(?P<b>[A-Za-z0-9+/]{43,88}))={0,2})",
    },
    Rule {
        kind: SecretKind::Jwt,
        check: Check::Jwt,
        pattern: concat!(
            b!(),
            r"(?P<b>eyJ[A-Za-z0-9_-]{10,})\.(?P<p>[A-Za-z0-9_-]{10,})\.[A-Za-z0-9_-]*"
        ),
    },
    Rule {
        kind: SecretKind::DatabaseUrl,
        check: Check::Password,
        pattern: concat!(
            r"(?i)",
            b!(),
            r"(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|clickhouse|cockroachdb|couchdb|neo4j(?:\+s)?|jdbc:[a-z]+)://[^\s:/@]*:(?P<b>[^\s@/]+)@[^\s/?#'<>]+"
        ),
    },
    Rule {
        kind: SecretKind::UrlPassword,
        check: Check::Password,
        pattern: concat!(
            r"(?i)",
            b!(),
            r"(?:https?|ftps?|sftp|ssh|git|smtps?|imaps?|ldaps?|wss?|svn)://[^\s:/@]+:(?P<b>[^\s@/]+)@[^\s/?#'<>]+"
        ),
    },
    Rule {
        kind: SecretKind::BearerToken,
        check: Check::RandomValue,
        pattern: r#"(?i)authorization["']?\s*[:=]\s*["']?(?:bearer|token|basic)\s+(?P<s>[A-Za-z0-9._~+/-]{20,}=*)"#,
    },
    Rule {
        kind: SecretKind::BearerToken,
        check: Check::RandomValue,
        pattern: concat!(b!(), r"Bearer\s+(?P<s>[A-Za-z0-9._~+/-]{20,}=*)"),
    },
    // The keyword must end the key or be followed by a separator, so `tokenizer` and
    // `max_tokens` are not keys of secrets.
    Rule {
        kind: SecretKind::EnvSecret,
        check: Check::Assignment,
        pattern: r#"(?i)(?:^|[^A-Za-z0-9_.-])(?P<k>[A-Za-z0-9_.-]*?(?:api[_.-]?key|apikey|secret|token|pass(?:w(?:or)?d|phrase)?|pwd|private[_.-]?key|access[_.-]?key|auth[_.-]?key|credentials?|signing[_.-]?key|client[_.-]?secret)(?:[_.-][A-Za-z0-9_.-]*)?)["']?[ \t]*(?::=|=>|[:=])[ \t]*["']?(?P<s>[^\s"'`,;&)\]}]+)"#,
    },
];

struct Compiled {
    set: RegexSet,
    each: Vec<Regex>,
    /// A 40-character AWS secret candidate (checked for boundaries by hand).
    aws_secret: Regex,
    /// A 32-hex Twilio auth token candidate.
    hex32: Regex,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let patterns = RULES.iter().map(|r| r.pattern);
    Compiled {
        set: RegexSet::new(patterns.clone()).expect("the guard's patterns compile"),
        each: patterns
            .map(|p| Regex::new(p).expect("the guard's patterns compile"))
            .collect(),
        aws_secret: Regex::new(r"[A-Za-z0-9/+]{40}").expect("compiles"),
        hex32: Regex::new(concat!(b!(), r"[0-9a-f]{32}", b!())).expect("compiles"),
    }
});

/// Every secret-shaped span in the text.
///
/// Spans are sorted and never overlap: overlapping finds are merged into one span, which
/// takes the most specific kind (a GitHub token inside `GITHUB_TOKEN=…` is a `github_token`).
pub fn find_secrets(text: &str) -> Vec<SecretMatch> {
    let compiled = &*COMPILED;
    let hits = compiled.set.matches(text);
    if !hits.matched_any() {
        return Vec::new();
    }
    let mut found = Vec::new();
    for i in hits.iter() {
        scan(&RULES[i], &compiled.each[i], text, &mut found);
    }
    merge(found)
}

/// The kind of the first secret in the text, if any.
pub(super) fn first_secret(text: &str) -> Option<SecretKind> {
    find_secrets(text).first().map(|m| m.kind)
}

fn scan(rule: &Rule, re: &Regex, text: &str, found: &mut Vec<SecretMatch>) {
    let compiled = &*COMPILED;
    for caps in re.captures_iter(text) {
        let whole = caps.get(0).expect("group 0 is the match");
        let span = caps.name("s").unwrap_or(whole);
        let body = caps.name("b").map_or(span.as_str(), |m| m.as_str());
        let range = match rule.check {
            Check::Shape => Some(span.range()),
            Check::Plausible => plausible_token(body).then(|| span.range()),
            Check::Crc32Tail => checksum::crc32_base62_tail(body).then(|| span.range()),
            Check::Jwt => jwt(&caps).then(|| span.range()),
            Check::DiscordId => discord_id(body).then(|| span.range()),
            Check::Bech32 => checksum::bech32_valid(whole.as_str()).then(|| span.range()),
            Check::Password => real_password(body).then(|| span.range()),
            Check::AwsSecret => aws_secret(span.as_str()).then(|| span.range()),
            Check::RandomValue => random_value(span.as_str()).then(|| span.range()),
            Check::Assignment => assignment(&caps).then(|| span.range()),
            Check::Pem => {
                if let Some((kind, range)) = pem(text, &caps) {
                    found.push(SecretMatch { kind, range });
                }
                None
            }
            Check::AwsId => {
                if !whole.as_str().contains("EXAMPLE") {
                    found.push(SecretMatch {
                        kind: rule.kind,
                        range: whole.range(),
                    });
                    near(
                        text,
                        whole.range(),
                        &compiled.aws_secret,
                        |candidate, range| {
                            aws_boundaries(text, &range)
                                && aws_secret(candidate)
                                && !candidate.contains("EXAMPLE")
                        },
                    )
                    .for_each(|range| {
                        found.push(SecretMatch {
                            kind: SecretKind::AwsSecretAccessKey,
                            range,
                        })
                    });
                }
                None
            }
            Check::TwilioSid => {
                near(text, whole.range(), &compiled.hex32, |candidate, _| {
                    plausible_token(candidate)
                })
                .for_each(|range| {
                    found.push(SecretMatch {
                        kind: rule.kind,
                        range,
                    })
                });
                None
            }
        };
        if let Some(range) = range {
            found.push(SecretMatch {
                kind: rule.kind,
                range,
            });
        }
    }
}

/// How far from an AWS key id or a Twilio sid its secret may sit to count as its partner.
const NEAR: usize = 200;

/// The finds of `re` within [`NEAR`] bytes of `anchor` (outside it) that `keep` accepts.
fn near<'t>(
    text: &'t str,
    anchor: Range<usize>,
    re: &'t Regex,
    keep: impl Fn(&str, Range<usize>) -> bool + 't,
) -> impl Iterator<Item = Range<usize>> + 't {
    let mut from = anchor.start.saturating_sub(NEAR);
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let mut to = (anchor.end + NEAR).min(text.len());
    while !text.is_char_boundary(to) {
        to += 1;
    }
    re.find_iter(&text[from..to]).filter_map(move |m| {
        let range = from + m.start()..from + m.end();
        let outside = range.end <= anchor.start || range.start >= anchor.end;
        (outside && keep(m.as_str(), range.clone())).then_some(range)
    })
}

/// An AWS secret stands alone: no base64 character right before or after it.
fn aws_boundaries(text: &str, range: &Range<usize>) -> bool {
    let alnum = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'+' | b'=');
    let before = text.as_bytes()[..range.start].last().copied();
    let after = text.as_bytes().get(range.end).copied();
    !before.is_some_and(alnum) && !after.is_some_and(alnum)
}

/// Real AWS secret keys are 40 characters of base64: both cases and a digit or `/` or `+`
/// (hex commit ids and lower-case paths have no upper case).
fn aws_secret(value: &str) -> bool {
    let (lower, upper, _, _) = classes(value);
    let other = value
        .bytes()
        .any(|b| b.is_ascii_digit() || b == b'/' || b == b'+');
    lower && upper && other && !has_run(value, 5) && !value.contains("EXAMPLE")
}

fn jwt(caps: &Captures<'_>) -> bool {
    let (Some(header), Some(payload)) = (caps.name("b"), caps.name("p")) else {
        return false;
    };
    let Some(header) = checksum::base64_decode(header.as_str()) else {
        return false;
    };
    let Ok(header) = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&header)
    else {
        return false;
    };
    header.get("alg").is_some_and(serde_json::Value::is_string)
        && checksum::base64_decode(payload.as_str()).is_some()
}

/// A Discord token starts with base64 of the bot's snowflake id in decimal.
fn discord_id(first: &str) -> bool {
    checksum::base64_decode(first).is_some_and(|id| {
        (17..=20).contains(&id.len()) && id.iter().all(u8::is_ascii_digit) && id[0] != b'0'
    })
}

fn pem(text: &str, caps: &Captures<'_>) -> Option<(SecretKind, Range<usize>)> {
    let header = caps.get(0)?;
    let kind = match caps.name("l").map(|l| l.as_str().trim_end()) {
        Some("OPENSSH") => SecretKind::OpensshPrivateKey,
        Some("PGP") => SecretKind::PgpPrivateKey,
        _ => SecretKind::PrivateKey,
    };
    let rest = &text[header.end()..];
    let (body, end_marker) = match rest.find("-----END ") {
        Some(at) => {
            let after = at + "-----END ".len();
            let close = rest[after..]
                .find("-----")
                .map_or(after, |c| after + c + "-----".len());
            (&rest[..at], Some(header.end() + close))
        }
        None => (rest, None),
    };
    // The body is base64 lines (split by real or escaped newlines, or spaces when pasted
    // flat), after optional `Name: value` headers. Prose after a bare header line is words,
    // never a 40-character base64 line.
    let mut longest = 0;
    let mut last_end = header.end();
    for word in words(body) {
        let w = &body[word.clone()];
        if w.contains(':') || w.contains(',') {
            continue;
        }
        if !w
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        {
            break;
        }
        longest = longest.max(w.len());
        last_end = header.end() + word.end;
    }
    (longest >= 40).then(|| (kind, header.start()..end_marker.unwrap_or(last_end)))
}

/// Words of a PEM body: split at whitespace and at escaped newlines (`\n`, `\r`), as a key
/// pasted from JSON arrives.
fn words(body: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let bytes = body.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        let is_gap = |i: usize| {
            bytes[i].is_ascii_whitespace()
                || (bytes[i] == b'\\' && matches!(bytes.get(i + 1), Some(b'n' | b'r' | b't')))
        };
        let skip = |i: usize| if bytes[i] == b'\\' { 2 } else { 1 };
        while at < bytes.len() && is_gap(at) {
            at += skip(at);
        }
        if at >= bytes.len() {
            return None;
        }
        let start = at;
        while at < bytes.len() && !is_gap(at) {
            at += 1;
        }
        Some(start..at)
    })
}

/// Key names that hold no secret though they name one (`TOKEN_TTL`, `SECRET_NAME`, a path),
/// and lists that carry cursors (`nextPageToken`).
fn ordinary_key(key: &str) -> bool {
    const LAST: &[&str] = &[
        "file",
        "path",
        "dir",
        "url",
        "uri",
        "id",
        "name",
        "ttl",
        "len",
        "length",
        "type",
        "kind",
        "count",
        "env",
        "header",
        "hash",
        "sha256",
        "sha",
        "digest",
        "fingerprint",
        "prefix",
        "expiry",
        "expires",
        "lifetime",
        "limit",
        "size",
        "version",
        "location",
        "ref",
        "mode",
        "policy",
        "format",
        "scope",
        "scopes",
        "endpoint",
        "arn",
        "rotation",
        "age",
        "min",
        "max",
    ];
    let key = key.to_ascii_lowercase();
    ["page", "cursor", "next", "continuation", "resume", "sync"]
        .iter()
        .any(|w| key.contains(w))
        || key
            .rsplit(['_', '.', '-'])
            .next()
            .is_some_and(|last| LAST.contains(&last))
}

fn assignment(caps: &Captures<'_>) -> bool {
    let (Some(key), Some(value)) = (caps.name("k"), caps.name("s")) else {
        return false;
    };
    let (key, value) = (key.as_str(), value.as_str());
    if ordinary_key(key) {
        return false;
    }
    if !random_value(value) {
        return password_key(key) && typed_password(value);
    }
    // A bare `token:` is common in prose and cursors; only a mixed-case value counts there.
    if key.eq_ignore_ascii_case("token") {
        let (lower, upper, _, _) = classes(value);
        return lower && upper;
    }
    true
}

fn password_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    ["pass", "pwd"].iter().any(|w| key.contains(w))
}

/// Passwords are shorter than keys: ten characters of at least three classes will do, when
/// the key says it is a password.
fn typed_password(value: &str) -> bool {
    let (l, u, d, o) = classes(value);
    let kinds = [l, u, d, o].iter().filter(|&&c| c).count();
    value.len() >= 10
        && kinds >= 3
        && !value.starts_with(['$', '<', '{', '%', '['])
        && !PLACEHOLDER_WORDS
            .iter()
            .any(|w| value.to_ascii_lowercase().contains(w))
        && !reference(value)
}

/// Which of lower case, upper case, digits and other characters the text has.
fn classes(text: &str) -> (bool, bool, bool, bool) {
    text.bytes()
        .fold((false, false, false, false), |(l, u, d, o), b| {
            (
                l || b.is_ascii_lowercase(),
                u || b.is_ascii_uppercase(),
                d || b.is_ascii_digit(),
                o || !b.is_ascii_alphanumeric(),
            )
        })
}

/// Whether the text has a run of `n` equal characters.
fn has_run(text: &str, n: usize) -> bool {
    let bytes = text.as_bytes();
    let mut run = 1;
    for pair in bytes.windows(2) {
        run = if pair[0] == pair[1] { run + 1 } else { 1 };
        if run >= n {
            return true;
        }
    }
    false
}

/// Whether the text has `n` characters counting up or down (`abcdef`, `123456`, `987654`).
fn has_sequence(text: &str, n: usize) -> bool {
    let bytes = text.as_bytes();
    let (mut up, mut down) = (1, 1);
    for pair in bytes.windows(2) {
        up = if pair[1] == pair[0].wrapping_add(1) {
            up + 1
        } else {
            1
        };
        down = if pair[1] == pair[0].wrapping_sub(1) {
            down + 1
        } else {
            1
        };
        if up >= n || down >= n {
            return true;
        }
    }
    false
}

/// Words that only placeholders and documentation contain.
const PLACEHOLDER_WORDS: &[&str] = &[
    "xxxx",
    "example",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "redacted",
    "dummy",
    "sample",
    "replace",
    "insert",
];

/// The random part of a prefixed token: no placeholder filler, two character classes,
/// enough distinct characters. A random token fails this with negligible odds (runs are
/// five long, seven in hex, where four equal digits are common).
fn plausible_token(body: &str) -> bool {
    let lower = body.to_ascii_lowercase();
    if PLACEHOLDER_WORDS.iter().any(|w| lower.contains(w)) {
        return false;
    }
    let hex = body.bytes().all(|b| b.is_ascii_hexdigit());
    let run = if hex { 7 } else { 5 };
    if has_run(body, run) || has_sequence(body, 6) {
        return false;
    }
    let (l, u, d, _) = classes(body);
    let kinds = usize::from(l) + usize::from(u) + usize::from(d);
    kinds >= 2 && distinct(body) >= (body.len() / 3).min(10)
}

fn distinct(text: &str) -> usize {
    let mut seen = [false; 256];
    text.bytes().for_each(|b| seen[usize::from(b)] = true);
    seen.iter().filter(|&&s| s).count()
}

/// Bits per character, from the character frequencies of the text itself.
fn entropy(text: &str) -> f64 {
    let mut counts = [0u32; 256];
    text.bytes().for_each(|b| counts[usize::from(b)] += 1);
    let n = text.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// A value typed after a keyword (`API_KEY=`, `Bearer`): long, random-looking, and not a
/// reference (`$VAR`, `${{ secrets.X }}`, `<YOUR_KEY>`), a path or a few words.
fn random_value(value: &str) -> bool {
    const MIN_LEN: usize = 16;
    if value.len() < MIN_LEN
        || value.starts_with(['$', '<', '{', '%', '[', '(', '*', '.', '/', '~'])
    {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    if lower.contains("your") || lower.contains("here") || lower.starts_with("http") {
        return false;
    }
    // `refs/heads/main`, `correct-horse-battery`, `ferry.toml`: words, not randomness.
    if value
        .bytes()
        .all(|b| b.is_ascii_lowercase() || matches!(b, b'-' | b'_' | b'.' | b'/'))
    {
        return false;
    }
    if value.bytes().all(|b| b.is_ascii_digit()) || uuid(value) || reference(value) {
        return false;
    }
    plausible_token(value) && entropy(value) >= 3.3
}

/// A name in code rather than a value: `process.env.FERRY_TOKEN`, `settings.SECRET_KEY`.
fn reference(value: &str) -> bool {
    let mut segments = value.split('.');
    let word = |s: &str| {
        s.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && s.bytes().filter(u8::is_ascii_digit).count() <= 2
    };
    value.contains('.') && segments.all(word)
}

fn uuid(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, &b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// A password in a URL, unless it is a placeholder for one.
fn real_password(password: &str) -> bool {
    let lower = password.to_ascii_lowercase();
    !(password.starts_with(['$', '<', '{', '%', '['])
        || lower.contains("xxx")
        || password.contains("***")
        || password.contains("...")
        || password
            .bytes()
            .all(|b| b == b'*' || b == b'x' || b == b'X')
        || ["changeme", "redacted", "password_here", "secret_here"]
            .iter()
            .any(|w| lower.contains(w)))
}

/// Merges overlapping finds: the union of their ranges, the most specific kind.
fn merge(mut found: Vec<SecretMatch>) -> Vec<SecretMatch> {
    found.sort_by_key(|m| (m.range.start, m.kind));
    let mut merged: Vec<SecretMatch> = Vec::with_capacity(found.len());
    for m in found {
        match merged.last_mut() {
            Some(last) if m.range.start < last.range.end => {
                last.range.end = last.range.end.max(m.range.end);
                last.kind = last.kind.min(m.kind);
            }
            _ => merged.push(m),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once_in_priority_order() {
        let mut sorted = SecretKind::ALL;
        sorted.sort();
        assert_eq!(sorted, SecretKind::ALL);
        sorted.windows(2).for_each(|w| assert_ne!(w[0], w[1]));
        let names: std::collections::BTreeSet<_> =
            SecretKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), SecretKind::ALL.len());
    }

    #[test]
    fn every_rule_compiles() {
        assert_eq!(COMPILED.each.len(), RULES.len());
    }

    #[test]
    fn runs_and_sequences_are_found() {
        assert!(has_run("abccccc", 5));
        assert!(!has_run("abcccc", 5));
        assert!(has_sequence("xxabcdefyy", 6));
        assert!(has_sequence("9876543", 6));
        assert!(!has_sequence("a1b2c3d4", 6));
    }

    #[test]
    fn entropy_is_zero_for_one_character_and_four_bits_for_sixteen() {
        assert_eq!(entropy("aaaa"), 0.0);
        assert!((entropy("0123456789abcdef") - 4.0).abs() < 1e-9);
    }

    #[test]
    fn overlapping_finds_merge_into_the_most_specific_kind() {
        let merged = merge(vec![
            SecretMatch {
                kind: SecretKind::EnvSecret,
                range: 0..30,
            },
            SecretMatch {
                kind: SecretKind::GithubToken,
                range: 10..50,
            },
            SecretMatch {
                kind: SecretKind::Jwt,
                range: 60..70,
            },
        ]);
        assert_eq!(
            merged,
            [
                SecretMatch {
                    kind: SecretKind::GithubToken,
                    range: 0..50
                },
                SecretMatch {
                    kind: SecretKind::Jwt,
                    range: 60..70
                },
            ]
        );
    }
}
