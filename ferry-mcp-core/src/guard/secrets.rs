//! Secret shapes: one rule per format, each a pattern plus the check that tells the real
//! thing from a look-alike (a checksum, a decoded header, or at least "not a placeholder").
//!
//! One search for every rule's literals runs first, so ordinary text costs one pass; only the
//! rules a literal triggers run their pattern, around the literal or over the text, and a
//! pattern is compiled the first time its rule is triggered (a process compiles the few it
//! needs, not all of them).

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::{LazyLock, OnceLock};

use aho_corasick::automaton::{Automaton as _, StateID};
use aho_corasick::{Anchored, MatchKind, StartKind, dfa::DFA};
use regex::{Captures, Regex};

use super::{checksum, disguise, services};

/// Declares [`SecretKind`] from one table: each kind's variant, its stable name and how the
/// refusal says it. The order of the table is the priority order.
macro_rules! secret_kinds {
    ($($(#[doc = $doc:literal])+ $variant:ident = $name:literal, $described:literal;)+) => {
        /// The kinds of secret the guard knows, most specific first: when two spans overlap,
        /// the merged span takes the earlier kind.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum SecretKind {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl SecretKind {
            /// Every kind, in priority order.
            pub const ALL: [SecretKind; [$(stringify!($variant)),+].len()] =
                [$(Self::$variant,)+];

            /// The stable snake_case name, for reports and `[redacted: <kind>]`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)+
                }
            }

            /// The kind in words with its article, as the refusal says it ("a github token").
            pub const fn described(self) -> &'static str {
                match self {
                    $(Self::$variant => $described,)+
                }
            }
        }
    };
}

secret_kinds! {
    /// A PEM private key (`-----BEGIN [RSA |EC |ENCRYPTED ]PRIVATE KEY-----` with its body).
    PrivateKey = "private_key", "a private key";
    /// An OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`).
    OpensshPrivateKey = "openssh_private_key", "an openssh private key";
    /// An armored PGP private key block.
    PgpPrivateKey = "pgp_private_key", "a pgp private key";
    /// A PKCS#12 (`.p12`, `.pfx`) bundle in base64: a private key with its certificates
    /// (DER `SEQUENCE { INTEGER 3, SEQUENCE …`, so `MII…IBAzCC…`).
    Pkcs12 = "pkcs12", "a pkcs#12 key bundle";
    /// An age identity (`AGE-SECRET-KEY-1…`, bech32 with its checksum).
    AgeSecretKey = "age_secret_key", "an age secret key";
    /// A ferry key file's `"secret"`: the hex seed of an agent's or the master's key.
    FerrySecretKey = "ferry_secret_key", "a ferry secret key";
    /// A GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`) whose CRC-32 checks out.
    GithubToken = "github_token", "a github token";
    /// A GitHub fine-grained personal access token (`github_pat_…`).
    GithubFineGrainedToken = "github_fine_grained_token", "a github fine-grained token";
    /// A GitLab token (`glpat-`, `gldt-`, `glrt-`, …, or a runner's `GR1348941…`).
    GitlabToken = "gitlab_token", "a gitlab token";
    /// An Anthropic API key (`sk-ant-api03-…`).
    AnthropicApiKey = "anthropic_api_key", "an anthropic api key";
    /// An OpenAI API key (`sk-…`, `sk-proj-…`, `sk-svcacct-…`).
    OpenAiApiKey = "openai_api_key", "an openai api key";
    /// A Google API key (`AIza…`).
    GoogleApiKey = "google_api_key", "a google api key";
    /// A Google OAuth client secret (`GOCSPX-…`) or access token (`ya29.…`).
    GoogleOauth = "google_oauth", "a google oauth secret";
    /// A Hugging Face token (`hf_…`, `api_org_…`).
    HuggingfaceToken = "huggingface_token", "a hugging face token";
    /// An AWS access key id (`AKIA…`, `ASIA…`, `A3T…`).
    AwsAccessKeyId = "aws_access_key_id", "an aws access key id";
    /// An AWS secret access key, named as one or beside an access key id.
    AwsSecretAccessKey = "aws_secret_access_key", "an aws secret access key";
    /// A Slack token (`xoxb-`, `xoxp-`, `xapp-`, `xoxe-`, …).
    SlackToken = "slack_token", "a slack token";
    /// A Slack incoming webhook (`hooks.slack.com/services/…`).
    SlackWebhook = "slack_webhook", "a slack webhook url";
    /// An npm token (`npm_…`) whose CRC-32 checks out.
    NpmToken = "npm_token", "an npm token";
    /// A PyPI upload token (`pypi-AgEIcHlwaS5vcmc…`).
    PypiToken = "pypi_token", "a pypi token";
    /// A Stripe secret or restricted key (`sk_live_`, `rk_live_`, …) or webhook secret.
    StripeKey = "stripe_key", "a stripe key";
    /// A Twilio API key (`SK` and 32 hex digits).
    TwilioApiKey = "twilio_api_key", "a twilio api key";
    /// A Twilio auth token: 32 hex digits named as one or beside an account sid.
    TwilioAuthToken = "twilio_auth_token", "a twilio auth token";
    /// A SendGrid API key (`SG.….…`).
    SendgridApiKey = "sendgrid_api_key", "a sendgrid api key";
    /// A Discord bot token (base64 of the bot's id, a timestamp, an HMAC).
    DiscordBotToken = "discord_bot_token", "a discord bot token";
    /// A Discord webhook URL.
    DiscordWebhook = "discord_webhook", "a discord webhook url";
    /// A Telegram bot token (`<bot id>:AA…`).
    TelegramBotToken = "telegram_bot_token", "a telegram bot token";
    /// A Shopify access token (`shpat_`, `shpss_`, …).
    ShopifyToken = "shopify_token", "a shopify token";
    /// A DigitalOcean token (`dop_v1_…`).
    DigitaloceanToken = "digitalocean_token", "a digitalocean token";
    /// An Azure storage or service bus key in a connection string (`AccountKey=…`).
    AzureStorageKey = "azure_storage_key", "an azure storage key";
    /// An Azure AD (Entra) client secret (`…8Q~…`).
    AzureAdClientSecret = "azure_ad_client_secret", "an azure ad client secret";
    /// A 1Password secret key (`A3-…`) or service account token (`ops_eyJ…`).
    OnepasswordSecret = "onepassword_secret", "a 1password secret";
    /// An Adobe client secret (`p8e-…`).
    AdobeClientSecret = "adobe_client_secret", "an adobe client secret";
    /// An Alibaba Cloud access key id (`LTAI…`).
    AlibabaAccessKeyId = "alibaba_access_key_id", "an alibaba access key id";
    /// A JFrog Artifactory API key (`AKCp…`) or reference token (`cmVmd…`).
    ArtifactoryToken = "artifactory_token", "an artifactory token";
    /// An Atlassian API token (`ATATT3…`).
    AtlassianApiToken = "atlassian_api_token", "an atlassian api token";
    /// An Authress service client access key (`sc_….acc_…`).
    AuthressKey = "authress_key", "an authress key";
    /// A ClickHouse Cloud API secret (`4b1d…`).
    ClickhouseSecret = "clickhouse_secret", "a clickhouse secret";
    /// A Clojars deploy token (`CLOJARS_…`).
    ClojarsToken = "clojars_token", "a clojars token";
    /// A Cloudflare Origin CA key (`v1.0-…`).
    CloudflareOriginCaKey = "cloudflare_origin_ca_key", "a cloudflare origin ca key";
    /// A Databricks token (`dapi…`).
    DatabricksToken = "databricks_token", "a databricks token";
    /// A Defined Networking API key (`dnkey-…`).
    DefinedNetworkingKey = "defined_networking_key", "a defined networking key";
    /// A Doppler token (`dp.pt.…`).
    DopplerToken = "doppler_token", "a doppler token";
    /// A Dropbox short-lived token (`sl.…`).
    DropboxToken = "dropbox_token", "a dropbox token";
    /// A Duffel API token (`duffel_live_…`).
    DuffelToken = "duffel_token", "a duffel token";
    /// A Dynatrace API token (`dt0c01.….…`).
    DynatraceToken = "dynatrace_token", "a dynatrace token";
    /// An EasyPost API key (`EZAK…`, `EZTK…`).
    EasypostKey = "easypost_key", "an easypost key";
    /// A Facebook or Instagram access token (`EAAC…`, `EAAM…`).
    FacebookAccessToken = "facebook_access_token", "a facebook access token";
    /// A Flutterwave key (`FLWSECK_TEST-…`).
    FlutterwaveKey = "flutterwave_key", "a flutterwave key";
    /// A Fly.io access token (`fo1_…`, `fm1a_…`, `fm2_…`).
    FlyioToken = "flyio_token", "a fly.io token";
    /// A Frame.io API token (`fio-u-…`).
    FrameioToken = "frameio_token", "a frame.io token";
    /// A Grafana API key (`eyJrIjoi…`), cloud token (`glc_…`) or service account token (`glsa_…`).
    GrafanaToken = "grafana_token", "a grafana token";
    /// A Harness personal or service account token (`pat.….….…`).
    HarnessToken = "harness_token", "a harness token";
    /// A HashiCorp Terraform Cloud token (`….atlasv1.…`).
    TerraformToken = "terraform_token", "a terraform cloud token";
    /// A HashiCorp Vault token (`hvs.…`, `hvb.…`, or a legacy `s.…` named as Vault's).
    VaultToken = "vault_token", "a vault token";
    /// A Heroku API key (`HRKU-AA…`, or a UUID named as Heroku's).
    HerokuApiKey = "heroku_api_key", "a heroku api key";
    /// An Infracost API key (`ico-…`).
    InfracostKey = "infracost_key", "an infracost key";
    /// A 42 intra client secret (`s-s4t2ud-…`).
    Intra42Secret = "intra42_secret", "an intra42 secret";
    /// A Linear API key (`lin_api_…`).
    LinearApiKey = "linear_api_key", "a linear api key";
    /// A Mailgun private key (`key-…`), public key (`pubkey-…`) or webhook signing key.
    MailgunKey = "mailgun_key", "a mailgun key";
    /// A Mailchimp API key (32 hex digits, `-us` and a data center).
    MailchimpApiKey = "mailchimp_api_key", "a mailchimp api key";
    /// A MaxMind license key (`…_…_mmk`).
    MaxmindLicenseKey = "maxmind_license_key", "a maxmind license key";
    /// A Microsoft Teams incoming webhook URL.
    TeamsWebhook = "teams_webhook", "a microsoft teams webhook url";
    /// A New Relic key (`NRAK-`, `NRJS-`, `NRII-`).
    NewRelicKey = "new_relic_key", "a new relic key";
    /// A Notion integration token (`ntn_…`).
    NotionToken = "notion_token", "a notion token";
    /// A NuGet API key (`oy2…`).
    NugetKey = "nuget_key", "a nuget key";
    /// An Octopus Deploy API key (`API-…`).
    OctopusDeployKey = "octopus_deploy_key", "an octopus deploy key";
    /// An OpenShift user token (`sha256~…`).
    OpenshiftToken = "openshift_token", "an openshift token";
    /// A Perplexity API key (`pplx-…`).
    PerplexityKey = "perplexity_key", "a perplexity key";
    /// A Plaid access token (`access-production-<uuid>`).
    PlaidToken = "plaid_token", "a plaid token";
    /// A PlanetScale token or password (`pscale_tkn_`, `pscale_pw_`, `pscale_oauth_`).
    PlanetscaleToken = "planetscale_token", "a planetscale token";
    /// A Postman API key (`PMAK-…`).
    PostmanKey = "postman_key", "a postman key";
    /// A Prefect API key (`pnu_…`).
    PrefectKey = "prefect_key", "a prefect key";
    /// A Pulumi access token (`pul-…`).
    PulumiToken = "pulumi_token", "a pulumi token";
    /// A ReadMe API key (`rdme_…`).
    ReadmeKey = "readme_key", "a readme key";
    /// A RubyGems API key (`rubygems_…`).
    RubygemsKey = "rubygems_key", "a rubygems key";
    /// A Scalingo API token (`tk-us-…`).
    ScalingoToken = "scalingo_token", "a scalingo token";
    /// A Sendinblue (Brevo) API key (`xkeysib-…`).
    SendinblueKey = "sendinblue_key", "a sendinblue key";
    /// A Sentry auth token (`sntrys_…`, `sntryu_…`).
    SentryToken = "sentry_token", "a sentry token";
    /// A SettleMint token (`sm_pat_…`).
    SettlemintToken = "settlemint_token", "a settlemint token";
    /// A Shippo API token (`shippo_live_…`).
    ShippoToken = "shippo_token", "a shippo token";
    /// A Sidekiq Enterprise or Pro gem credential (`BUNDLE_GEMS__CONTRIBSYS__COM=…`).
    SidekiqSecret = "sidekiq_secret", "a sidekiq secret";
    /// A SonarQube or SonarCloud token (`squ_`, `sqp_`, `sqa_` and 40 hex digits).
    SonarToken = "sonar_token", "a sonar token";
    /// A Sourcegraph access token (`sgp_…`).
    SourcegraphToken = "sourcegraph_token", "a sourcegraph token";
    /// A Square access token or secret (`EAAA…`, `sq0atp-…`, `sq0csp-…`).
    SquareToken = "square_token", "a square token";
    /// A Typeform personal token (`tfp_…`).
    TypeformToken = "typeform_token", "a typeform token";
    /// A Yandex access token (`t1.…`), API key (`AQVN…`) or AWS-style key (`YC…`).
    YandexKey = "yandex_key", "a yandex key";
    /// A Datadog API or application key (hex, named as Datadog's).
    DatadogKey = "datadog_key", "a datadog key";
    /// A key of a service that gives its keys no prefix, named after the service
    /// (`ALGOLIA_API_KEY=…`, `cloudflare_token: …`): the value has that service's shape.
    ServiceKey = "service_key", "a service api key";
    /// A value of a Kubernetes Secret manifest (`kind: Secret`, under `data:` or
    /// `stringData:`): whatever it holds, it is what the manifest keeps secret.
    KubernetesSecret = "kubernetes_secret", "a kubernetes secret";
    /// A JSON Web Token (three base64url parts, a header with `alg`).
    Jwt = "jwt", "a json web token";
    /// A database URL with a password (`postgres://user:pass@host`, mysql, mongodb+srv, …).
    DatabaseUrl = "database_url", "a database url with a password";
    /// Another URL with a password in it (`https://user:pass@host`).
    UrlPassword = "url_password", "a url with a password";
    /// Basic credentials: `Authorization: Basic <base64 of user:password>`, `curl -u user:pass`.
    BasicAuth = "basic_auth", "a basic auth credential";
    /// A random value after `Authorization: Bearer` (or `token`).
    BearerToken = "bearer_token", "a bearer token";
    /// An assignment like `API_KEY=…`, `SECRET: …`, `"client_secret": "…"` of a random value.
    EnvSecret = "env_secret", "a secret assignment";
    /// A connection string with a password (`Server=…;Password=…`, `AccountKey=` aside).
    ConnectionString = "connection_string", "a connection string with a password";
    /// A password assigned to a password-named variable (`DB_PASSWORD=…`, `"password": "…"`).
    PasswordAssignment = "password_assignment", "a password assignment";
}

impl SecretKind {
    /// Whether a value of this kind counts by what names it or stands around it (a key name,
    /// a header, a URL's parts, a PEM block's armour) rather than by a shape of its own.
    pub(super) const fn named_by_its_context(self) -> bool {
        matches!(
            self,
            Self::PrivateKey
                | Self::OpensshPrivateKey
                | Self::PgpPrivateKey
                | Self::FerrySecretKey
                | Self::AwsSecretAccessKey
                | Self::TwilioAuthToken
                | Self::AzureStorageKey
                | Self::SidekiqSecret
                | Self::DatadogKey
                | Self::ServiceKey
                | Self::KubernetesSecret
                | Self::DatabaseUrl
                | Self::UrlPassword
                | Self::BasicAuth
                | Self::BearerToken
                | Self::EnvSecret
                | Self::ConnectionString
                | Self::PasswordAssignment
        )
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
    /// The `k` group names a service and the `s` group has the shape of its keys.
    Service,
    /// The `b` group is base64 of `user:password`.
    Basic,
    /// The `s` group, unquoted, is a password typed by hand rather than a placeholder.
    TypedPassword,
    /// A Twilio account sid (not itself secret) and 32-hex auth tokens near it.
    TwilioSid,
    /// A `kind: Secret` line: the values of its manifest's `data:` and `stringData:`.
    KubernetesSecret,
    /// The `s` group is a long quoted value drawn at random (a salt, a signing key), whatever
    /// characters it is drawn from.
    Salt,
}

/// Where a rule is matched once one of its literals is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Over the whole text: the rule's match may run far from its literal (a PEM body, a
    /// token of any length after its prefix, a partner secret near a key id).
    Text,
    /// In a window of [`BEFORE`] and [`AFTER`] bytes around each literal.
    Window,
    /// Over each line (the pattern never crosses one) where the literal is part of a key
    /// followed by one of these separators (`API_KEY=`, `"password": `): prose that names a token costs no look.
    Assignment(&'static [u8]),
}

/// The separators of `KEY=value`, `key: value`, `key := value`, `key => value`.
const ASSIGN: &[u8] = b":=";
/// Those and a service key's looser ones: `key, value` in a list, `key > value`, `key || value`.
const ASSIGN_LOOSE: &[u8] = b":=,>|";

struct Rule {
    kind: SecretKind,
    check: Check,
    /// `|`-separated literals, matched without regard to case, one of which every match of
    /// the pattern contains: one literal search over the text for all of them is the only
    /// pass ordinary text costs, and a rule is matched only where its literal is.
    trigger: &'static str,
    scope: Scope,
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
        trigger: "-----BEGIN ",
        scope: Scope::Text,
        pattern: r"-----BEGIN (?P<l>[A-Z0-9]+(?: [A-Z0-9]+)* )?PRIVATE KEY(?: BLOCK)?-----",
    },
    // The DER of a PKCS#12 file opens with SEQUENCE, INTEGER 3, SEQUENCE: in base64 its first
    // twelve characters are `MI?` (a two-byte length), three of the length, `IBAzC`; no
    // certificate, public key or PKCS#1/#8 key opens so (their version is 0 or 2, or absent).
    Rule {
        kind: SecretKind::Pkcs12,
        check: Check::Shape,
        trigger: "IBAzC",
        scope: Scope::Text,
        pattern: concat!(
            b!(),
            r"MI[I-L][A-Za-z0-9+/]{3}IBAzC[A-D][A-Za-z0-9+/]{52,}(?:\r?\n[A-Za-z0-9+/]{16,})*={0,2}"
        ),
    },
    Rule {
        kind: SecretKind::AgeSecretKey,
        check: Check::Bech32,
        trigger: "AGE-SECRET-KEY-1",
        scope: Scope::Text,
        pattern: r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
    },
    Rule {
        kind: SecretKind::FerrySecretKey,
        check: Check::Shape,
        trigger: "\"secret\"",
        scope: Scope::Text,
        pattern: r#""secret"\s*:\s*"(?P<s>[0-9a-f]{64})""#,
    },
    Rule {
        kind: SecretKind::GithubToken,
        check: Check::Crc32Tail,
        trigger: "ghp_|gho_|ghu_|ghs_|ghr_",
        scope: Scope::Text,
        pattern: concat!(b!(), r"gh[pousr]_(?P<b>[A-Za-z0-9]{36})", b!()),
    },
    // GitHub has published no checksum for these, so the shape and randomness decide: a
    // real token must never pass for want of a checksum we only guessed.
    Rule {
        kind: SecretKind::GithubFineGrainedToken,
        check: Check::Plausible,
        trigger: "github_pat_",
        scope: Scope::Text,
        pattern: concat!(
            b!(),
            r"github_pat_(?P<b>[A-Za-z0-9]{22}_[A-Za-z0-9]{59})",
            b!()
        ),
    },
    Rule {
        kind: SecretKind::GitlabToken,
        check: Check::Plausible,
        trigger: "glpat-|gldt-|glrt-|glptt-|glft-|glimt-|glsoat-|gloas-|glcbt-|glagent-|glffct-",
        scope: Scope::Text,
        pattern: concat!(
            b!(),
            r"gl(?:pat|dt|rt|ptt|ft|imt|soat|oas|cbt|agent|ffct)-(?P<b>[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+)*)"
        ),
    },
    Rule {
        kind: SecretKind::AnthropicApiKey,
        check: Check::Plausible,
        trigger: "sk-ant-",
        scope: Scope::Text,
        pattern: concat!(
            b!(),
            r"sk-ant-(?:api|admin|oat|ort|sid)[0-9]{2}-(?P<b>[A-Za-z0-9_-]{40,})"
        ),
    },
    Rule {
        kind: SecretKind::OpenAiApiKey,
        check: Check::Plausible,
        trigger: "sk-",
        scope: Scope::Text,
        pattern: concat!(
            b!(),
            r"sk-(?:(?:proj|svcacct|admin|None)-)?(?P<b>[A-Za-z0-9_-]{32,})"
        ),
    },
    // `T3BlbkFJ` is base64 of "OpenAI": it marks a key even with its `sk-` prefix cut off.
    Rule {
        kind: SecretKind::OpenAiApiKey,
        check: Check::Plausible,
        trigger: "T3BlbkFJ",
        scope: Scope::Text,
        pattern: r"(?P<b>[A-Za-z0-9_-]{20,74}T3BlbkFJ[A-Za-z0-9_-]{20,74})",
    },
    Rule {
        kind: SecretKind::GoogleApiKey,
        check: Check::Plausible,
        trigger: "AIza",
        scope: Scope::Text,
        pattern: concat!(b!(), r"AIza(?P<b>[0-9A-Za-z_-]{35})"),
    },
    Rule {
        kind: SecretKind::GoogleOauth,
        check: Check::Plausible,
        trigger: "GOCSPX-",
        scope: Scope::Text,
        pattern: concat!(b!(), r"GOCSPX-(?P<b>[A-Za-z0-9_-]{28})"),
    },
    Rule {
        kind: SecretKind::GoogleOauth,
        check: Check::Plausible,
        trigger: "ya29.",
        scope: Scope::Text,
        pattern: concat!(b!(), r"ya29\.(?P<b>[A-Za-z0-9_-]{50,})"),
    },
    Rule {
        kind: SecretKind::HuggingfaceToken,
        check: Check::Plausible,
        trigger: "hf_",
        scope: Scope::Text,
        pattern: concat!(b!(), r"hf_(?P<b>[A-Za-z]{34})", b!()),
    },
    Rule {
        kind: SecretKind::AwsAccessKeyId,
        check: Check::AwsId,
        trigger: "A3T|AKIA|ASIA|ABIA|ACCA|a3t|akia|asia|abia|acca",
        scope: Scope::Text,
        pattern: concat!(
            b!(),
            // Or folded to lower case, as a name is (`ferry channel join --as akia…`).
            r"(?:(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}|(?:a3t[a-z0-9]|akia|asia|abia|acca)[a-z2-7]{16})",
            b!()
        ),
    },
    Rule {
        kind: SecretKind::AwsSecretAccessKey,
        check: Check::AwsSecret,
        // Every match has `secret` then `access` or `key`: prose about secrets says
        // `secret` alone.
        trigger: "secretaccess|secret_access|secretkey|secret_key",
        scope: Scope::Text,
        pattern: r#"(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)["']?\s*(?:[:=]|=>)?\s*["']?(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
    },
    Rule {
        kind: SecretKind::SlackToken,
        check: Check::Plausible,
        trigger: "xox",
        scope: Scope::Text,
        pattern: concat!(
            b!(),
            r"xox[abposre]-[0-9]{6,13}(?:-[0-9]{6,13}){0,2}-(?P<b>[A-Za-z0-9]{16,64})"
        ),
    },
    Rule {
        kind: SecretKind::SlackToken,
        check: Check::Plausible,
        trigger: "xapp-",
        scope: Scope::Text,
        pattern: concat!(
            b!(),
            r"xapp-[0-9]-[A-Z0-9]{8,12}-[0-9]{8,14}-(?P<b>[a-f0-9]{32,64})"
        ),
    },
    Rule {
        kind: SecretKind::SlackWebhook,
        check: Check::Plausible,
        trigger: "hooks.slack.com/",
        scope: Scope::Window,
        pattern: r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/(?P<b>[A-Za-z0-9+/]{43,56})",
    },
    // Legacy workspace and refresh tokens: `xoxa-2-…`, `xoxr-…`, letters and digits only.
    Rule {
        kind: SecretKind::SlackToken,
        check: Check::Plausible,
        trigger: "xoxa-|xoxr-",
        scope: Scope::Window,
        pattern: concat!(b!(), r"xox[ar]-(?:[0-9]-)?(?P<b>[0-9A-Za-z]{8,48})", b!()),
    },
    Rule {
        kind: SecretKind::NpmToken,
        check: Check::Crc32Tail,
        trigger: "npm_",
        scope: Scope::Text,
        pattern: concat!(b!(), r"npm_(?P<b>[A-Za-z0-9]{36})", b!()),
    },
    Rule {
        kind: SecretKind::PypiToken,
        check: Check::Plausible,
        trigger: "pypi-AgE",
        scope: Scope::Text,
        pattern: concat!(
            b!(),
            r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)(?P<b>[A-Za-z0-9_-]{50,})"
        ),
    },
    Rule {
        kind: SecretKind::StripeKey,
        check: Check::Plausible,
        trigger: "sk_live_|sk_test_|sk_prod_|rk_live_|rk_test_|rk_prod_",
        scope: Scope::Text,
        pattern: concat!(
            b!(),
            r"(?:sk|rk)_(?:live|test|prod)_(?P<b>[A-Za-z0-9]{24,247})",
            b!()
        ),
    },
    Rule {
        kind: SecretKind::StripeKey,
        check: Check::Plausible,
        trigger: "whsec_",
        scope: Scope::Text,
        pattern: concat!(b!(), r"whsec_(?P<b>[A-Za-z0-9+/]{32,}={0,2})"),
    },
    Rule {
        kind: SecretKind::TwilioApiKey,
        check: Check::Plausible,
        trigger: "SK",
        scope: Scope::Text,
        pattern: concat!(b!(), r"SK(?P<b>[0-9a-f]{32})", b!()),
    },
    Rule {
        kind: SecretKind::TwilioAuthToken,
        check: Check::Plausible,
        // Every match names the auth token in one word; `twilio` alone is a mention.
        trigger: "authtoken|auth_token|auth.token|auth-token",
        scope: Scope::Text,
        pattern: concat!(
            r#"(?i)twilio[A-Za-z0-9_.-]*?auth[_.-]?token["']?\s*[:=]\s*["']?(?P<s>[0-9a-f]{32})"#,
            b!()
        ),
    },
    Rule {
        kind: SecretKind::TwilioAuthToken,
        check: Check::TwilioSid,
        trigger: "AC",
        scope: Scope::Text,
        pattern: concat!(b!(), r"AC[0-9a-f]{32}", b!()),
    },
    Rule {
        kind: SecretKind::SendgridApiKey,
        check: Check::Plausible,
        trigger: "SG.",
        scope: Scope::Text,
        pattern: concat!(b!(), r"SG\.(?P<b>[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})"),
    },
    Rule {
        kind: SecretKind::DiscordBotToken,
        check: Check::DiscordId,
        trigger: ".",
        scope: Scope::Text,
        pattern: concat!(
            b!(),
            r"(?P<b>[MNO][A-Za-z0-9_-]{23,27})\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}"
        ),
    },
    Rule {
        kind: SecretKind::DiscordWebhook,
        check: Check::Plausible,
        trigger: "discord",
        scope: Scope::Text,
        pattern: r"https://(?:(?:canary|ptb)\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/(?P<b>[A-Za-z0-9_-]{60,68})",
    },
    Rule {
        kind: SecretKind::TelegramBotToken,
        check: Check::Plausible,
        trigger: ":A",
        scope: Scope::Text,
        pattern: concat!(b!(), r"[0-9]{8,10}:(?P<b>A[A-Za-z0-9_-]{34})"),
    },
    Rule {
        kind: SecretKind::ShopifyToken,
        check: Check::Plausible,
        trigger: "shpat_|shpca_|shppa_|shpss_",
        scope: Scope::Text,
        pattern: concat!(b!(), r"shp(?:at|ca|pa|ss)_(?P<b>[a-fA-F0-9]{32})", b!()),
    },
    Rule {
        kind: SecretKind::DigitaloceanToken,
        check: Check::Plausible,
        trigger: "dop_v1_|doo_v1_|dor_v1_",
        scope: Scope::Text,
        pattern: concat!(b!(), r"do[opr]_v1_(?P<b>[a-f0-9]{64})", b!()),
    },
    Rule {
        kind: SecretKind::AzureStorageKey,
        check: Check::Plausible,
        trigger: "AccountKey=|SharedAccessKey=",
        scope: Scope::Text,
        pattern: r"(?i)(?:AccountKey|SharedAccessKey)=(?P<s>(?-i:(?P<b>[A-Za-z0-9+/]{43,88}))={0,2})",
    },
    Rule {
        kind: SecretKind::GitlabToken,
        check: Check::Plausible,
        trigger: "GR1348941",
        scope: Scope::Window,
        pattern: concat!(b!(), r"GR1348941(?P<b>[A-Za-z0-9_-]{20})", b!()),
    },
    Rule {
        kind: SecretKind::GitlabToken,
        check: Check::Plausible,
        trigger: "_gitlab_session=",
        scope: Scope::Window,
        pattern: concat!(r"_gitlab_session=(?P<b>[0-9a-z]{32})", b!()),
    },
    Rule {
        kind: SecretKind::HuggingfaceToken,
        check: Check::Plausible,
        trigger: "api_org_",
        scope: Scope::Window,
        pattern: concat!(b!(), r"api_org_(?P<b>[A-Za-z]{34})", b!()),
    },
    Rule {
        kind: SecretKind::SlackToken,
        check: Check::Plausible,
        trigger: "xoxe",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"xoxe(?:\.xox[bp])?-[0-9]-(?P<b>[A-Z0-9]{140,170})",
            b!()
        ),
    },
    // Azure AD secrets carry `<digit>Q~` after three characters (gitleaks' finding); the
    // rest is drawn from a small alphabet.
    Rule {
        kind: SecretKind::AzureAdClientSecret,
        check: Check::Plausible,
        trigger: "Q~",
        scope: Scope::Window,
        pattern: r#"(?:^|[\\'"`\s>=:(,)])(?P<s>(?P<b>[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}))(?:$|[\\'"`\s<),;&])"#,
    },
    Rule {
        kind: SecretKind::OnepasswordSecret,
        check: Check::Shape,
        trigger: "A3-",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
            b!()
        ),
    },
    Rule {
        kind: SecretKind::OnepasswordSecret,
        check: Check::Plausible,
        trigger: "ops_eyJ",
        scope: Scope::Window,
        pattern: concat!(b!(), r"ops_eyJ(?P<b>[A-Za-z0-9+/]{250,}={0,3})"),
    },
    Rule {
        kind: SecretKind::AdobeClientSecret,
        check: Check::Plausible,
        trigger: "p8e-",
        scope: Scope::Window,
        pattern: concat!(b!(), r"p8e-(?P<b>[A-Za-z0-9]{32})", b!()),
    },
    Rule {
        kind: SecretKind::AlibabaAccessKeyId,
        check: Check::Plausible,
        trigger: "LTAI",
        scope: Scope::Window,
        pattern: concat!(b!(), r"LTAI(?P<b>[A-Za-z0-9]{20})", b!()),
    },
    Rule {
        kind: SecretKind::ArtifactoryToken,
        check: Check::Plausible,
        trigger: "AKCp|cmVmd",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"(?:AKCp(?P<b>[A-Za-z0-9]{69})|cmVmd[A-Za-z0-9]{59})",
            b!()
        ),
    },
    Rule {
        kind: SecretKind::AtlassianApiToken,
        check: Check::Plausible,
        trigger: "ATATT3",
        scope: Scope::Window,
        pattern: concat!(b!(), r"ATATT3(?P<b>[A-Za-z0-9_=-]{186})"),
    },
    Rule {
        kind: SecretKind::AuthressKey,
        check: Check::Plausible,
        trigger: ".acc_|.acc-",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_-][a-z0-9-]{10,32}\.(?P<b>[A-Za-z0-9+/_=-]{30,120})"
        ),
    },
    Rule {
        kind: SecretKind::ClickhouseSecret,
        check: Check::Plausible,
        trigger: "4b1d",
        scope: Scope::Window,
        pattern: concat!(b!(), r"4b1d(?P<b>[A-Za-z0-9]{38})", b!()),
    },
    Rule {
        kind: SecretKind::ClojarsToken,
        check: Check::Plausible,
        trigger: "CLOJARS_",
        scope: Scope::Window,
        pattern: concat!(b!(), r"CLOJARS_(?P<b>[a-z0-9]{60})", b!()),
    },
    Rule {
        kind: SecretKind::CloudflareOriginCaKey,
        check: Check::Plausible,
        trigger: "v1.0-",
        scope: Scope::Window,
        pattern: concat!(b!(), r"v1\.0-[a-f0-9]{24}-(?P<b>[a-f0-9]{146})", b!()),
    },
    Rule {
        kind: SecretKind::DatabricksToken,
        check: Check::Plausible,
        trigger: "dapi",
        scope: Scope::Window,
        pattern: concat!(b!(), r"dapi(?P<b>[a-f0-9]{32})(?:-[0-9])?", b!()),
    },
    Rule {
        kind: SecretKind::DefinedNetworkingKey,
        check: Check::Plausible,
        trigger: "dnkey-",
        scope: Scope::Window,
        pattern: concat!(b!(), r"dnkey-[a-z0-9=_-]{26}-(?P<b>[a-z0-9=_-]{52})"),
    },
    Rule {
        kind: SecretKind::DopplerToken,
        check: Check::Plausible,
        trigger: "dp.",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?P<b>[A-Za-z0-9]{40,44})",
            b!()
        ),
    },
    Rule {
        kind: SecretKind::DropboxToken,
        check: Check::Plausible,
        trigger: "sl.",
        scope: Scope::Window,
        pattern: concat!(b!(), r"sl\.(?:u\.)?(?P<b>[A-Za-z0-9_=-]{130,})"),
    },
    Rule {
        kind: SecretKind::DuffelToken,
        check: Check::Plausible,
        trigger: "duffel_",
        scope: Scope::Window,
        pattern: concat!(b!(), r"duffel_(?:test|live)_(?P<b>[A-Za-z0-9_=-]{43})"),
    },
    Rule {
        kind: SecretKind::DynatraceToken,
        check: Check::Plausible,
        trigger: "dt0c01.",
        scope: Scope::Window,
        pattern: concat!(b!(), r"dt0c01\.[A-Z0-9]{24}\.(?P<b>[A-Z0-9]{64})", b!()),
    },
    Rule {
        kind: SecretKind::EasypostKey,
        check: Check::Plausible,
        trigger: "EZAK|EZTK",
        scope: Scope::Window,
        pattern: concat!(b!(), r"EZ[AT]K(?P<b>[A-Za-z0-9]{54})", b!()),
    },
    Rule {
        kind: SecretKind::FacebookAccessToken,
        check: Check::Plausible,
        trigger: "EAAM|EAAC",
        scope: Scope::Window,
        pattern: concat!(b!(), r"EAA[MC](?P<b>[A-Za-z0-9]{100,})", b!()),
    },
    Rule {
        kind: SecretKind::FlutterwaveKey,
        check: Check::Plausible,
        trigger: "FLW",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"FLW(?:PUB|SEC)K(?:_TEST)?-(?P<b>[a-hA-H0-9]{32})-X|FLWSECK_TEST[a-hA-H0-9]{12}",
            b!()
        ),
    },
    Rule {
        kind: SecretKind::FlyioToken,
        check: Check::Plausible,
        trigger: "fo1_|fm1a_|fm1r_|fm2_",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"(?:fo1_(?P<b>[A-Za-z0-9_-]{43})|fm1[ar]_[A-Za-z0-9+/]{100,}={0,3}|fm2_[A-Za-z0-9+/]{100,}={0,3})"
        ),
    },
    Rule {
        kind: SecretKind::FrameioToken,
        check: Check::Plausible,
        trigger: "fio-u-",
        scope: Scope::Window,
        pattern: concat!(b!(), r"fio-u-(?P<b>[A-Za-z0-9_=-]{64})"),
    },
    Rule {
        kind: SecretKind::GrafanaToken,
        check: Check::Plausible,
        trigger: "eyJrIjoi|glc_|glsa_",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"(?:eyJrIjoi(?P<b>[A-Za-z0-9]{70,400})={0,3}|glc_[A-Za-z0-9+/]{32,400}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b)"
        ),
    },
    Rule {
        kind: SecretKind::HarnessToken,
        check: Check::Plausible,
        trigger: "pat.|sat.",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"(?:pat|sat)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.(?P<b>[A-Za-z0-9]{20})",
            b!()
        ),
    },
    Rule {
        kind: SecretKind::TerraformToken,
        check: Check::Plausible,
        trigger: ".atlasv1.",
        scope: Scope::Window,
        pattern: concat!(b!(), r"[a-z0-9]{14}\.atlasv1\.(?P<b>[a-z0-9_=-]{60,70})"),
    },
    Rule {
        kind: SecretKind::VaultToken,
        check: Check::Plausible,
        trigger: "hvs.|hvb.",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"(?:hvs\.(?P<b>[A-Za-z0-9_-]{90,120})|hvb\.[A-Za-z0-9_-]{138,300})"
        ),
    },
    Rule {
        kind: SecretKind::HerokuApiKey,
        check: Check::Plausible,
        trigger: "HRKU-AA",
        scope: Scope::Window,
        pattern: concat!(b!(), r"HRKU-AA(?P<b>[0-9A-Za-z_-]{58})"),
    },
    Rule {
        kind: SecretKind::InfracostKey,
        check: Check::Plausible,
        trigger: "ico-",
        scope: Scope::Window,
        pattern: concat!(b!(), r"ico-(?P<b>[A-Za-z0-9]{32})", b!()),
    },
    Rule {
        kind: SecretKind::Intra42Secret,
        check: Check::Plausible,
        trigger: "s-s4t2",
        scope: Scope::Window,
        pattern: concat!(b!(), r"s-s4t2(?:ud|af)-(?P<b>[a-f0-9]{64})", b!()),
    },
    Rule {
        kind: SecretKind::LinearApiKey,
        check: Check::Plausible,
        trigger: "lin_api_",
        scope: Scope::Window,
        pattern: concat!(b!(), r"lin_api_(?P<b>[A-Za-z0-9]{40})", b!()),
    },
    Rule {
        kind: SecretKind::MailgunKey,
        check: Check::Plausible,
        trigger: "key-",
        scope: Scope::Window,
        pattern: concat!(b!(), r"(?:pub)?key-(?P<b>[a-f0-9]{32})", b!()),
    },
    Rule {
        kind: SecretKind::MailchimpApiKey,
        check: Check::Plausible,
        trigger: "-us",
        scope: Scope::Window,
        pattern: concat!(b!(), r"(?P<b>[a-f0-9]{32})-us[0-9]{1,2}", b!()),
    },
    Rule {
        kind: SecretKind::TeamsWebhook,
        check: Check::Plausible,
        trigger: ".webhook.office.com/",
        scope: Scope::Window,
        pattern: r"https://[a-z0-9-]+\.webhook\.office\.com/webhookb2/[a-z0-9-]{36}@[a-z0-9-]{36}/IncomingWebhook/(?P<b>[a-z0-9]{32})/[a-z0-9-]{36}",
    },
    Rule {
        kind: SecretKind::NewRelicKey,
        check: Check::Plausible,
        trigger: "NRAK-|NRJS-|NRII-",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"(?:NRAK-(?P<b>[A-Z0-9]{27})|NRJS-[a-f0-9]{19}|NRII-[A-Za-z0-9_-]{32})",
            b!()
        ),
    },
    Rule {
        kind: SecretKind::NotionToken,
        check: Check::Plausible,
        trigger: "ntn_",
        scope: Scope::Window,
        pattern: concat!(b!(), r"ntn_[0-9]{11}(?P<b>[A-Za-z0-9]{35})", b!()),
    },
    Rule {
        kind: SecretKind::NugetKey,
        check: Check::Plausible,
        trigger: "oy2",
        scope: Scope::Window,
        pattern: concat!(b!(), r"oy2(?P<b>[a-z0-9]{43})", b!()),
    },
    Rule {
        kind: SecretKind::OctopusDeployKey,
        check: Check::Plausible,
        trigger: "API-",
        scope: Scope::Window,
        pattern: concat!(b!(), r"API-(?P<b>[A-Z0-9]{26})", b!()),
    },
    Rule {
        kind: SecretKind::OpenshiftToken,
        check: Check::Plausible,
        trigger: "sha256~",
        scope: Scope::Window,
        pattern: concat!(b!(), r"sha256~(?P<b>[A-Za-z0-9_-]{43})"),
    },
    Rule {
        kind: SecretKind::PerplexityKey,
        check: Check::Plausible,
        trigger: "pplx-",
        scope: Scope::Window,
        pattern: concat!(b!(), r"pplx-(?P<b>[A-Za-z0-9]{48})", b!()),
    },
    Rule {
        kind: SecretKind::PlaidToken,
        check: Check::Shape,
        trigger: "access-sandbox-|access-development-|access-production-",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            b!()
        ),
    },
    Rule {
        kind: SecretKind::PlanetscaleToken,
        check: Check::Plausible,
        trigger: "pscale_",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"pscale_(?:tkn|oauth|pw)_(?P<b>[A-Za-z0-9=._-]{32,64})"
        ),
    },
    Rule {
        kind: SecretKind::PostmanKey,
        check: Check::Plausible,
        trigger: "PMAK-",
        scope: Scope::Window,
        pattern: concat!(b!(), r"PMAK-[a-f0-9]{24}-(?P<b>[a-f0-9]{34})", b!()),
    },
    Rule {
        kind: SecretKind::PrefectKey,
        check: Check::Plausible,
        trigger: "pnu_",
        scope: Scope::Window,
        pattern: concat!(b!(), r"pnu_(?P<b>[A-Za-z0-9]{36})", b!()),
    },
    Rule {
        kind: SecretKind::PulumiToken,
        check: Check::Plausible,
        trigger: "pul-",
        scope: Scope::Window,
        pattern: concat!(b!(), r"pul-(?P<b>[a-f0-9]{40})", b!()),
    },
    Rule {
        kind: SecretKind::ReadmeKey,
        check: Check::Plausible,
        trigger: "rdme_",
        scope: Scope::Window,
        pattern: concat!(b!(), r"rdme_(?P<b>[a-z0-9]{70})", b!()),
    },
    Rule {
        kind: SecretKind::RubygemsKey,
        check: Check::Plausible,
        trigger: "rubygems_",
        scope: Scope::Window,
        pattern: concat!(b!(), r"rubygems_(?P<b>[a-f0-9]{48})", b!()),
    },
    Rule {
        kind: SecretKind::ScalingoToken,
        check: Check::Plausible,
        trigger: "tk-us-",
        scope: Scope::Window,
        pattern: concat!(b!(), r"tk-us-(?P<b>[A-Za-z0-9_-]{48})"),
    },
    Rule {
        kind: SecretKind::SendinblueKey,
        check: Check::Plausible,
        trigger: "xkeysib-",
        scope: Scope::Window,
        pattern: concat!(b!(), r"xkeysib-(?P<b>[a-f0-9]{64})-[A-Za-z0-9]{16}", b!()),
    },
    Rule {
        kind: SecretKind::SentryToken,
        check: Check::Plausible,
        trigger: "sntrys_|sntryu_",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"(?:sntrys_eyJpYXQiO(?P<b>[A-Za-z0-9+/=_]{40,400})|sntryu_[a-f0-9]{64}\b)"
        ),
    },
    Rule {
        kind: SecretKind::SettlemintToken,
        check: Check::Plausible,
        trigger: "sm_pat_|sm_aat_|sm_sat_",
        scope: Scope::Window,
        pattern: concat!(b!(), r"sm_(?:pat|aat|sat)_(?P<b>[A-Za-z0-9]{16})", b!()),
    },
    Rule {
        kind: SecretKind::ShippoToken,
        check: Check::Plausible,
        trigger: "shippo_",
        scope: Scope::Window,
        pattern: concat!(b!(), r"shippo_(?:live|test)_(?P<b>[a-fA-F0-9]{40})", b!()),
    },
    Rule {
        kind: SecretKind::SidekiqSecret,
        check: Check::Plausible,
        trigger: "contribsys",
        scope: Scope::Window,
        pattern: r#"(?i)BUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM["']?\s*(?:[:=]|=>)\s*["']?(?P<s>(?P<b>[a-f0-9]{8}:[a-f0-9]{8}))"#,
    },
    Rule {
        kind: SecretKind::SidekiqSecret,
        check: Check::Plausible,
        trigger: "contribsys.com",
        scope: Scope::Window,
        pattern: r"(?i)https?://(?P<s>(?P<b>[a-f0-9]{8}:[a-f0-9]{8}))@(?:gems|enterprise)\.contribsys\.com",
    },
    Rule {
        kind: SecretKind::SonarToken,
        check: Check::Plausible,
        trigger: "squ_|sqp_|sqa_",
        scope: Scope::Window,
        pattern: concat!(b!(), r"sq[upa]_(?P<b>[a-f0-9]{40})", b!()),
    },
    Rule {
        kind: SecretKind::MaxmindLicenseKey,
        check: Check::Plausible,
        trigger: "_mmk",
        scope: Scope::Window,
        pattern: concat!(b!(), r"(?P<b>[A-Za-z0-9]{6}_[A-Za-z0-9]{29})_mmk", b!()),
    },
    Rule {
        kind: SecretKind::KubernetesSecret,
        check: Check::KubernetesSecret,
        trigger: "kind:",
        scope: Scope::Text,
        pattern: r#"(?mi)^[ \t-]*kind:[ \t]*["']?secret["']?[ \t]*\r?$"#,
    },
    Rule {
        kind: SecretKind::SourcegraphToken,
        check: Check::Plausible,
        trigger: "sgp_",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"sgp_(?:[a-fA-F0-9]{16}_|local_)?(?P<b>[a-fA-F0-9]{40})",
            b!()
        ),
    },
    Rule {
        kind: SecretKind::SquareToken,
        check: Check::Plausible,
        trigger: "EAAA|sq0atp-|sq0csp-",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"(?:EAAA(?P<b>[A-Za-z0-9_-]{60})|sq0atp-[A-Za-z0-9_-]{22}|sq0csp-[A-Za-z0-9_-]{43})",
            b!()
        ),
    },
    Rule {
        kind: SecretKind::TypeformToken,
        check: Check::Plausible,
        trigger: "tfp_",
        scope: Scope::Window,
        pattern: concat!(b!(), r"tfp_(?P<b>[A-Za-z0-9_.=-]{59})"),
    },
    Rule {
        kind: SecretKind::YandexKey,
        check: Check::Plausible,
        trigger: "t1.|AQVN|YC",
        scope: Scope::Window,
        pattern: concat!(
            b!(),
            r"(?:t1\.[A-Za-z0-9_-]+={0,2}\.(?P<b>[A-Za-z0-9_-]{86})={0,2}|AQVN[A-Za-z0-9_-]{35,38}\b|YC[A-Za-z0-9_-]{38}\b)"
        ),
    },
    Rule {
        kind: SecretKind::ServiceKey,
        check: Check::Service,
        trigger: services::TRIGGER,
        scope: Scope::Assignment(ASSIGN_LOOSE),
        pattern: services::PATTERN,
    },
    Rule {
        kind: SecretKind::ConnectionString,
        check: Check::Password,
        trigger: "password|pwd",
        scope: Scope::Window,
        pattern: r"(?i)(?:server|data source|host|address|addr|network address|endpoint|hostname)\s*=[^;\n]{1,200};(?:[^;\n]{0,200};){0,8}?\s*(?:password|pwd)\s*=\s*(?P<s>(?P<b>[^;\s'`]{4,128}))",
    },
    Rule {
        kind: SecretKind::BasicAuth,
        check: Check::Basic,
        trigger: "basic ",
        scope: Scope::Window,
        pattern: concat!(
            r"(?i)",
            b!(),
            r"basic\s+(?P<s>(?P<b>[A-Za-z0-9+/]{8,}={0,2}))"
        ),
    },
    Rule {
        kind: SecretKind::BasicAuth,
        check: Check::Password,
        trigger: "curl ",
        scope: Scope::Window,
        pattern: r#"(?:^|\s)curl\s[^\n]*?(?:-u|--user)(?:\s+|=)["']?[^\s:'"]+:(?P<s>(?P<b>[^\s'"]{4,}))"#,
    },
    Rule {
        kind: SecretKind::PasswordAssignment,
        check: Check::TypedPassword,
        trigger: "password|passwd|passphrase|pwd|_pass|-pass|.pass|pass=|pass:|pass\"|pass'",
        scope: Scope::Assignment(ASSIGN),
        pattern: r#"(?i)(?:^|[^A-Za-z0-9_.-])(?P<k>[A-Za-z0-9_.-]*(?:pass(?:w(?:or)?d|phrase)?|pwd)(?:[_.-][A-Za-z0-9_.-]*)?)["']?\]?[ \t]*(?::=|=>|[:=])[ \t]*(?P<s>"[^"\n]{6,128}"|'[^'\n]{6,128}'|[^\s"'`,;]{6,128})"#,
    },
    // PHP's constants (`define('DB_PASSWORD', '…')`, WordPress's salts) and NuGet's stored
    // credentials name their secret in a string, not as an assignment's key.
    Rule {
        kind: SecretKind::PasswordAssignment,
        check: Check::TypedPassword,
        trigger: "define",
        scope: Scope::Window,
        pattern: r#"(?i)\bdefine\(\s*["'](?P<k>[A-Z0-9_]*(?:PASSWORD|PASSWD|PASS|PWD)[A-Z0-9_]*)["']\s*,\s*(?P<s>"[^"\n]{6,128}"|'[^'\n]{6,128}')"#,
    },
    Rule {
        kind: SecretKind::EnvSecret,
        check: Check::Salt,
        trigger: "define",
        scope: Scope::Window,
        pattern: r#"(?i)\bdefine\(\s*["'][A-Z0-9_]*(?:KEY|SALT|SECRET|TOKEN)[A-Z0-9_]*["']\s*,\s*(?P<s>"[^"\n]{24,256}"|'[^'\n]{24,256}')"#,
    },
    Rule {
        kind: SecretKind::PasswordAssignment,
        check: Check::Password,
        trigger: "<add key=",
        scope: Scope::Window,
        pattern: r#"(?i)<add\s+key\s*=\s*"(?:ClearText)?Password"\s+value\s*=\s*"(?P<s>[^"\s]{4,128})""#,
    },
    Rule {
        kind: SecretKind::Jwt,
        check: Check::Jwt,
        trigger: "eyJ",
        scope: Scope::Text,
        pattern: concat!(
            b!(),
            r"(?P<b>eyJ[A-Za-z0-9_-]{10,})\.(?P<p>[A-Za-z0-9_-]{10,})\.[A-Za-z0-9_-]*"
        ),
    },
    Rule {
        kind: SecretKind::DatabaseUrl,
        check: Check::Password,
        trigger: "://",
        scope: Scope::Text,
        pattern: concat!(
            r"(?i)",
            b!(),
            r"(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|clickhouse|cockroachdb|couchdb|neo4j(?:\+s)?|jdbc:[a-z]+)://[^\s:/@]*:(?P<b>[^\s@/]+)@[^\s/?#'<>]+"
        ),
    },
    Rule {
        kind: SecretKind::UrlPassword,
        check: Check::Password,
        trigger: "://",
        scope: Scope::Text,
        pattern: concat!(
            r"(?i)",
            b!(),
            r"(?:https?|ftps?|sftp|ssh|git|smtps?|imaps?|ldaps?|wss?|svn)://[^\s:/@]+:(?P<b>[^\s@/]+)@[^\s/?#'<>]+"
        ),
    },
    Rule {
        kind: SecretKind::BearerToken,
        check: Check::RandomValue,
        trigger: "authorization",
        scope: Scope::Text,
        pattern: r#"(?i)authorization["']?\s*[:=]\s*["']?(?:bearer|token|basic)\s+(?P<s>[A-Za-z0-9._~+/-]{20,}=*)"#,
    },
    Rule {
        kind: SecretKind::BearerToken,
        check: Check::RandomValue,
        trigger: "Bearer",
        scope: Scope::Text,
        pattern: concat!(b!(), r"Bearer\s+(?P<s>[A-Za-z0-9._~+/-]{20,}=*)"),
    },
    // The keyword must end the key or be followed by a separator, so `tokenizer` and
    // `max_tokens` are not keys of secrets.
    Rule {
        kind: SecretKind::EnvSecret,
        check: Check::Assignment,
        trigger: "key|secret|token|pass|pwd|credential",
        scope: Scope::Assignment(ASSIGN),
        pattern: r#"(?i)(?:^|[^A-Za-z0-9_.-])(?P<k>[A-Za-z0-9_.-]*?(?:api[_.-]?key|apikey|secret|token|pass(?:w(?:or)?d|phrase)?|pwd|private[_.-]?key|access[_.-]?key|auth[_.-]?key|credentials?|signing[_.-]?key|client[_.-]?secret)(?:[_.-][A-Za-z0-9_.-]*)?)["']?[ \t]*(?::=|=>|[:=])[ \t]*["']?(?P<s>[^\s"'`,;&)\]}]+)"#,
    },
];

struct Compiled {
    /// The one pass over the text: every rule's literals, found overlapping (one literal
    /// may sit inside another, `sk-` in `sk-ant-`), without regard to case ([`literals_in`]).
    literals: DFA,
    /// The rules each literal triggers, by the literal's index in `literals`.
    triggered: Vec<Vec<Trigger>>,
    /// Each rule's pattern, compiled when a literal first triggers the rule: compiling all of
    /// them took about 270 million instructions (20-25 ms), nearly all of what a `ferry`
    /// command that checks a name or masks its output spent, for the few rules a text ever
    /// triggers.
    each: Vec<OnceLock<Regex>>,
    /// A 40-character AWS secret candidate (checked for boundaries by hand).
    aws_secret: Regex,
    /// A 32-hex Twilio auth token candidate.
    hex32: Regex,
}

/// One rule a literal triggers, and what the text must hold where the literal was found.
struct Trigger {
    rule: usize,
    /// The literal as the rule's pattern spells it, when the pattern heeds case: `ac` in
    /// `each` is no Twilio sid's `AC`, and a look at it would cost a pass for nothing.
    exact: Option<&'static [u8]>,
    /// What must stand around the literal (see [`GATES`]).
    gate: Gate,
}

/// What the text must hold around a literal for a rule to look there: what every match of
/// the rule's pattern has around it, read from the bytes in a few steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    /// Nothing: the literal is enough.
    Open,
    /// Runs of token characters this long right before and right after the literal.
    Runs(usize, usize),
    /// Right after `://`, a URL's credentials: `user:password@` (the user may be empty), no
    /// blank, `/` or `@` in the user, no blank, `/` in the password, a host after the `@`.
    Credentials,
    /// Right after the literal, an optional quote, blanks, then one of these bytes
    /// (`Authorization: Bearer …`, `Password=…`).
    Then(&'static [u8]),
}

/// Literals too common in prose for each to cost its rule a look: the rule (every rule that
/// names the literal, or the kind given) looks only where the text around the literal has the
/// shape its pattern needs there. `.` ends every sentence and a Discord token's has its
/// 24-character id before it; a Telegram token's `:A` has its bot id's digits; most URLs
/// carry no password; prose says "the Authorization header" and "no password".
const GATES: &[(&str, Option<SecretKind>, Gate)] = &[
    (".", None, Gate::Runs(23, 6)),
    (":A", None, Gate::Runs(8, 34)),
    ("://", None, Gate::Credentials),
    ("authorization", None, Gate::Then(b":=")),
    (
        "password",
        Some(SecretKind::ConnectionString),
        Gate::Then(b"="),
    ),
    ("pwd", Some(SecretKind::ConnectionString), Gate::Then(b"=")),
];

impl Gate {
    /// Whether the literal found at `found` in `bytes` has what the gate asks for around it.
    fn open_at(self, bytes: &[u8], found: Range<usize>) -> bool {
        match self {
            Self::Open => true,
            Self::Runs(before, after) => {
                let token = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-');
                bytes[..found.start]
                    .iter()
                    .rev()
                    .take(before)
                    .filter(|b| token(b))
                    .count()
                    == before
                    && bytes[found.end..]
                        .iter()
                        .take(after)
                        .filter(|b| token(b))
                        .count()
                        == after
            }
            Self::Credentials => {
                // The patterns' `[^\s:/@]*:[^\s@/]+@[^\s/?#'<>]`: a byte a blank could be
                // part of (any non-ASCII one) is let through, so the gate never says no where
                // the pattern would say yes.
                let ends = |b: u8, stops: &[u8]| blank(b) || stops.contains(&b);
                let rest = &bytes[found.end..];
                let Some(colon) = rest.iter().position(|&b| ends(b, b":/@")) else {
                    return false;
                };
                let rest = &rest[colon..];
                if rest[0] != b':' {
                    return false;
                }
                let Some(at) = rest.iter().skip(1).position(|&b| ends(b, b"@/")) else {
                    return false;
                };
                at > 0
                    && rest[at + 1] == b'@'
                    && rest.get(at + 2).is_some_and(|&b| !ends(b, b"/?#'<>"))
            }
            Self::Then(separators) => {
                let mut at = found.end;
                if matches!(bytes.get(at), Some(b'"' | b'\'')) {
                    at += 1;
                }
                while bytes.get(at).is_some_and(|&b| blank(b)) {
                    at += 1;
                }
                bytes
                    .get(at)
                    .is_some_and(|b| separators.contains(b) || !b.is_ascii())
            }
        }
    }
}

/// A byte the patterns' `\s` matches in ASCII (the six of them: `u8::is_ascii_whitespace`
/// leaves out the vertical tab). A gate lets any non-ASCII byte through itself.
fn blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

impl Compiled {
    /// Rule `i`'s pattern, compiled on its first use (a test compiles every one).
    fn rule(&self, i: usize) -> &Regex {
        self.each[i]
            .get_or_init(|| Regex::new(RULES[i].pattern).expect("the guard's patterns compile"))
    }
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let mut triggered: HashMap<String, Vec<Trigger>> = HashMap::new();
    for (i, rule) in RULES.iter().enumerate() {
        let heeds_case = !rule.pattern.contains("(?i");
        for literal in rule.trigger.split('|').filter(|l| !l.is_empty()) {
            let gate = GATES
                .iter()
                .find(|(gated, kind, _)| {
                    *gated == literal && kind.is_none_or(|kind| kind == rule.kind)
                })
                .map_or(Gate::Open, |&(_, _, gate)| gate);
            triggered
                .entry(literal.to_ascii_lowercase())
                .or_default()
                .push(Trigger {
                    rule: i,
                    exact: heeds_case.then_some(literal.as_bytes()),
                    gate,
                });
        }
    }
    let (literals, triggered): (Vec<String>, Vec<Vec<Trigger>>) = triggered.into_iter().unzip();
    Compiled {
        literals: DFA::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .start_kind(StartKind::Unanchored)
            .prefilter(false)
            .build(&literals)
            .expect("the triggers compile"),
        triggered,
        each: RULES.iter().map(|_| OnceLock::new()).collect(),
        aws_secret: Regex::new(r"[A-Za-z0-9/+]{40}").expect("compiles"),
        hex32: Regex::new(concat!(b!(), r"[0-9a-f]{32}", b!())).expect("compiles"),
    }
});

/// Calls `each` with every literal of `literals` found in `bytes`, overlapping, as its index
/// and range, in the order they end (as `find_overlapping_iter` reports them).
///
/// The same walk as the crate's overlapping search, which keeps its state in memory between
/// the finds it returns: here the walk to the next find ([`special_after`]) is a loop that
/// keeps all it needs in registers, and what is done with a find is done outside it (most
/// bytes end no literal).
fn literals_in(literals: &DFA, bytes: &[u8], each: &mut dyn FnMut(usize, Range<usize>)) {
    let Ok(mut state) = literals.start_state(Anchored::No) else {
        return;
    };
    let mut at = 0;
    while let Some(end) = special_after(literals, bytes, &mut state, at) {
        if literals.is_dead(state) {
            return;
        }
        if literals.is_match(state) {
            for i in 0..literals.match_len(state) {
                let literal = literals.match_pattern(state, i);
                each(literal.as_usize(), end - literals.pattern_len(literal)..end);
            }
        }
        at = end;
    }
}

/// Walks `literals` over `bytes` from `from` in `state`, up to the first byte after which it
/// is in a special state (a match, or dead): that state, and where the byte ends. Never
/// inlined: inlined, the compiler keeps what the caller makes of a find's end counted in
/// memory along the loop, a few instructions a byte.
#[inline(never)]
fn special_after(literals: &DFA, bytes: &[u8], state: &mut StateID, from: usize) -> Option<usize> {
    let mut now = *state;
    for (i, &b) in bytes.get(from..)?.iter().enumerate() {
        now = literals.next_state(Anchored::No, now, b);
        if literals.is_special(now) {
            *state = now;
            return Some(from + i + 1);
        }
    }
    None
}

/// Every secret-shaped span in the text.
///
/// The text is read as written and as it would be once undisguised (decoded, normalised,
/// joined: `disguise`); a secret found in another reading spans what spelled it.
/// Spans are sorted and never overlap: overlapping finds are merged into one span, which
/// takes the most specific kind (a GitHub token inside `GITHUB_TOKEN=…` is a `github_token`).
pub fn find_secrets(text: &str) -> Vec<SecretMatch> {
    let mut found = find_written(text);
    for view in disguise::views(text) {
        found.extend(find_written(&view.text).into_iter().map(|m| SecretMatch {
            kind: m.kind,
            range: view.origin(&m.range),
        }));
    }
    merge(found)
}

/// The kind of the first secret in the text, if any.
pub(super) fn first_secret(text: &str) -> Option<SecretKind> {
    find_secrets(text).first().map(|m| m.kind)
}

/// The secrets in the text as written, before any of its other readings.
///
/// One literal search finds where each rule could match; ordinary text, which holds few of
/// the literals, costs that pass and a few short looks. A word that merely contains one
/// ("passed", "global") costs a look at its window or line, not a pass over the text.
fn find_written(text: &str) -> Vec<SecretMatch> {
    let compiled = &*COMPILED;
    let mut whole = vec![false; RULES.len()];
    let mut parts: Vec<(usize, Range<usize>)> = Vec::new();
    let bytes = text.as_bytes();
    literals_in(&compiled.literals, bytes, &mut |literal, m| {
        for trigger in &compiled.triggered[literal] {
            if trigger
                .exact
                .is_some_and(|exact| &bytes[m.clone()] != exact)
                || !trigger.gate.open_at(bytes, m.clone())
            {
                continue;
            }
            let i = trigger.rule;
            match RULES[i].scope {
                Scope::Text => whole[i] = true,
                Scope::Assignment(separators) => {
                    if !parts
                        .last()
                        .is_some_and(|(j, part)| *j == i && part.contains(&m.start))
                        && assigned(bytes, m.start, separators)
                    {
                        parts.push((i, line_around(text, m.clone())));
                    }
                }
                Scope::Window => parts.push((
                    i,
                    floor_boundary(text, m.start.saturating_sub(BEFORE))
                        ..ceil_boundary(text, m.end + AFTER),
                )),
            }
        }
    });
    let mut found = Vec::new();
    for (i, _) in whole.iter().enumerate().filter(|(_, w)| **w) {
        scan(&RULES[i], compiled.rule(i), text, &mut found);
    }
    parts.sort_by_key(|(i, w)| (*i, w.start));
    let mut merged: Vec<(usize, Range<usize>)> = Vec::with_capacity(parts.len());
    for (i, w) in parts {
        match merged.last_mut() {
            Some((j, last)) if *j == i && w.start <= last.end => last.end = last.end.max(w.end),
            _ => merged.push((i, w)),
        }
    }
    for (i, w) in merged {
        let mut local = Vec::new();
        scan(&RULES[i], compiled.rule(i), &text[w.clone()], &mut local);
        found.extend(local.into_iter().map(|m| SecretMatch {
            kind: m.kind,
            range: m.range.start + w.start..m.range.end + w.start,
        }));
    }
    found
}

/// Whether a key's characters from `at` on (`[A-Za-z0-9_.-]`), an optional quote and blanks
/// lead to one of `separators`: every assignment rule's key has that shape.
fn assigned(bytes: &[u8], mut at: usize, separators: &[u8]) -> bool {
    while bytes
        .get(at)
        .is_some_and(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    {
        at += 1;
    }
    if matches!(bytes.get(at), Some(b'"' | b'\'')) {
        at += 1;
    }
    // `$config['db_password'] = …`: the key is an array index.
    if bytes.get(at) == Some(&b']') {
        at += 1;
    }
    while matches!(bytes.get(at), Some(b' ' | b'\t')) {
        at += 1;
    }
    bytes.get(at).is_some_and(|b| separators.contains(b))
}

/// The line that holds `range` (without its line breaks).
fn line_around(text: &str, range: Range<usize>) -> Range<usize> {
    let start = text[..range.start].rfind('\n').map_or(0, |n| n + 1);
    let end = text[range.end..]
        .find('\n')
        .map_or(text.len(), |n| range.end + n);
    start..end
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
            Check::Service => caps
                .name("k")
                .and_then(|k| services::service_key(k.as_str(), span.as_str()))
                // A Twitter bearer token opens with 22 `A`s: the rest is what is random.
                .filter(|_| plausible_token(span.as_str().trim_start_matches('A')))
                .map(|kind| {
                    found.push(SecretMatch {
                        kind,
                        range: span.range(),
                    });
                })
                .and(None),
            Check::Basic => basic(body).then(|| span.range()),
            Check::TypedPassword => {
                let key = caps.name("k").map_or("", |k| k.as_str());
                let inner = unquoted(span.as_str());
                let skip = (span.len() - inner.len()) / 2;
                (!ordinary_key(key) && hand_typed_password(inner))
                    .then(|| span.start() + skip..span.end() - skip)
            }
            Check::Salt => {
                let inner = unquoted(span.as_str());
                let skip = (span.len() - inner.len()) / 2;
                salt(inner).then(|| span.start() + skip..span.end() - skip)
            }
            Check::KubernetesSecret => {
                found.extend(
                    kubernetes_values(text, whole.range()).map(|range| SecretMatch {
                        kind: rule.kind,
                        range,
                    }),
                );
                None
            }
            Check::Pem => {
                if let Some((kind, range)) = pem(text, &caps) {
                    found.push(SecretMatch { kind, range });
                }
                None
            }
            Check::AwsId => {
                if aws_id(whole.as_str()) {
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

/// How far before a trigger's literal its rule is matched: more than a key name before its
/// service's name, or a connection string's parts before its password.
const BEFORE: usize = 256;
/// How far after it: more than the longest value a triggered rule knows (a Vault batch
/// token's 300 characters, a Grafana key's 400).
const AFTER: usize = 448;

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
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

/// An AWS access key id, not AWS's documented example; folded to lower case it must hold a
/// digit, which no English word of its length does.
fn aws_id(id: &str) -> bool {
    !id.contains("EXAMPLE")
        && (id.bytes().any(|b| b.is_ascii_uppercase())
            || (!id.contains("example") && id[4..].bytes().any(|b| b.is_ascii_digit())))
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
        "hint",
        "field",
        "prompt",
        "strength",
        "rule",
        "rules",
        "regex",
        "pattern",
        "label",
        "placeholder",
        "required",
        "reset",
        "manager",
        "changed",
        "updated",
        "command",
        "cmd",
        "auth",
        "enabled",
        "store",
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
        && (!value.contains('<') || !value.ends_with('>'))
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

/// `Basic` credentials: base64 of `user:password`, printable, with a password.
fn basic(body: &str) -> bool {
    checksum::base64_decode(body)
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .is_some_and(|pair| {
            pair.split_once(':').is_some_and(|(user, password)| {
                !user.is_empty()
                    && password.len() >= 3
                    && !pair.chars().any(char::is_control)
                    && real_password(password)
            })
        })
}

/// A salt or signing key typed into code: long, of many distinct characters, not a phrase
/// (`put your unique phrase here`) nor a placeholder.
fn salt(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    value.len() >= 24
        && value.split_whitespace().count() <= 2
        && !PLACEHOLDER_WORDS.iter().any(|w| lower.contains(w))
        && !["your", "here", "phrase"].iter().any(|w| lower.contains(w))
        && distinct(value) >= 16
        && entropy(value) >= 4.0
}

/// The values of the Kubernetes Secret manifest whose `kind: Secret` line is at `kind`: the
/// entries under its `data:` (base64) and `stringData:` (plain) maps, in the same YAML
/// document (between `---` lines). Templates (`{{ … }}`), references (`${…}`) and empty
/// values are not secrets.
fn kubernetes_values(text: &str, kind: Range<usize>) -> impl Iterator<Item = Range<usize>> + '_ {
    let start = text[..kind.start].rfind("\n---").map_or(0, |at| at + 1);
    let end = text[kind.end..]
        .find("\n---")
        .map_or(text.len(), |at| kind.end + at);
    let mut values = Vec::new();
    // The indentation of the `data:` line whose entries are being read, and whether it is
    // `stringData:`.
    let mut map: Option<(usize, bool)> = None;
    let mut at = start;
    for line in text[start..end].split_inclusive('\n') {
        let line_start = at;
        at += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        let content = body.trim_start();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let indent = body.len() - content.len();
        if let Some((depth, plain)) = map {
            if indent > depth {
                if let Some((_, value)) = content.split_once(':') {
                    let trimmed = value.trim();
                    let inner = unquoted(trimmed);
                    let plausible = if plain {
                        real_password(inner) && !inner.starts_with('$')
                    } else {
                        inner.len() >= 4
                            && inner.bytes().all(|b| {
                                b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')
                            })
                    };
                    if !inner.is_empty() && !inner.contains("{{") && plausible {
                        let offset = line_start
                            + (body.len() - value.len())
                            + (value.len() - value.trim_start().len())
                            + (trimmed.len() - inner.len()) / 2;
                        values.push(offset..offset + inner.len());
                    }
                }
                continue;
            }
            map = None;
        }
        match content.trim_end() {
            "data:" => map = Some((indent, false)),
            "stringData:" => map = Some((indent, true)),
            _ => {}
        }
    }
    values.into_iter()
}

/// A value without the quotes around it.
fn unquoted(value: &str) -> &str {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&a), Some(&b)) if bytes.len() >= 2 && a == b && matches!(a, b'"' | b'\'') => {
            &value[1..value.len() - 1]
        }
        _ => value,
    }
}

/// Values a password-named field holds that are not a password: types, flags, references,
/// words of a schema or a form.
const NOT_PASSWORDS: &[&str] = &[
    "required",
    "optional",
    "string",
    "secret",
    "password",
    "hidden",
    "masked",
    "none",
    "null",
    "true",
    "false",
    "undefined",
    "boolean",
    "integer",
    "text",
    "prompt",
    "empty",
    "unset",
    "default",
    "enabled",
    "disabled",
];

/// A password someone typed, which need not look random (`correcthorsebattery`,
/// `Tr0ub4dor&3`): long enough, not a placeholder, a reference, a type or a few words.
fn hand_typed_password(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let (l, u, d, o) = classes(value);
    let kinds = [l, u, d, o].iter().filter(|&&c| c).count();
    value.len() >= 8
        && (kinds >= 2 || value.len() >= 12)
        && value.split_whitespace().count() <= 2
        && real_password(value)
        && !value.starts_with(['$', '<', '{', '%', '[', '(', '*', '#', '@', '&'])
        && !value.contains("()")
        && !call(value)
        && !value.contains('<')
        // `correct-horse-battery-staple`: the passphrase of every example, not of anyone.
        && !(value.split(['-', '_']).count() >= 3
            && value.bytes().all(|b| b.is_ascii_lowercase() || b == b'-' || b == b'_'))
        && !value.contains("::")
        && !value.contains("{{")
        && !NOT_PASSWORDS.contains(&lower.as_str())
        && !PLACEHOLDER_WORDS.iter().any(|w| lower.contains(w))
        && !["your", "here", "env", "secret"].iter().any(|w| lower.contains(w))
        && !reference(value)
        && !value.bytes().all(|b| b.is_ascii_digit())
        && !has_run(value, 4)
}

/// Whether a value is the start of a call in code (`password_hash($plain,`), not a value.
fn call(value: &str) -> bool {
    value.find('(').is_some_and(|at| {
        at > 0
            && value[..at]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'>' | b'-'))
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
pub(super) mod tests {
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
    fn every_rule_compiles_and_has_a_literal_to_be_found_by() {
        assert_eq!(COMPILED.each.len(), RULES.len());
        for (i, rule) in RULES.iter().enumerate() {
            assert!(Regex::new(rule.pattern).is_ok(), "{:?}", rule.kind);
            COMPILED.rule(i);
        }
        for rule in RULES {
            assert!(
                rule.trigger.split('|').all(|l| !l.is_empty()),
                "{:?}: {:?}",
                rule.kind,
                rule.trigger
            );
        }
    }

    /// Every text of the corpus, unescaped (`kind<TAB>text`, with `\n`, `\t`, `\\`).
    pub(in crate::guard) fn corpus() -> Vec<String> {
        [
            include_str!("../../tests/guard_corpus/secrets.txt"),
            include_str!("../../tests/guard_corpus/disguised.txt"),
            include_str!("../../tests/guard_corpus/ordinary.txt"),
            include_str!("../../tests/guard_corpus/code.txt"),
        ]
        .iter()
        .flat_map(|file| file.lines())
        .filter_map(|line| line.split_once('\t'))
        .map(|(_, text)| {
            let mut out = String::new();
            let mut chars = text.chars();
            while let Some(c) = chars.next() {
                match (c, c == '\\') {
                    (_, true) => match chars.next() {
                        Some('n') => out.push('\n'),
                        Some('t') => out.push('\t'),
                        Some(other) => out.push(other),
                        None => out.push('\\'),
                    },
                    (c, false) => out.push(c),
                }
            }
            out
        })
        .collect()
    }

    #[test]
    fn every_match_of_a_rule_holds_one_of_its_literals_where_its_gate_lets_the_rule_look() {
        // The literal pass is the only way a rule is asked: a match that holds none of its
        // literals, or only where a gate or the literal's case turns the rule away, would
        // go unseen. Each text as written and as each of its readings spells it.
        let compiled = &*COMPILED;
        let mut looked = 0;
        for text in corpus() {
            let mut readings = vec![text.clone()];
            readings.extend(disguise::views(&text).into_iter().map(|v| v.text));
            for reading in &readings {
                let bytes = reading.as_bytes();
                let mut seen: Vec<(usize, Range<usize>)> = Vec::new();
                literals_in(&compiled.literals, bytes, &mut |literal, m| {
                    for trigger in &compiled.triggered[literal] {
                        if trigger.exact.is_none_or(|exact| &bytes[m.clone()] == exact)
                            && trigger.gate.open_at(bytes, m.clone())
                        {
                            seen.push((trigger.rule, m.clone()));
                        }
                    }
                });
                for (i, rule) in RULES.iter().enumerate() {
                    for m in compiled.rule(i).find_iter(reading) {
                        looked += 1;
                        assert!(
                            seen.iter().any(|(rule, found)| *rule == i
                                && found.start >= m.start()
                                && found.end <= m.end()),
                            "{:?} matched {:?} in {reading:?} without a literal it is asked by",
                            rule.kind,
                            m.as_str()
                        );
                    }
                }
            }
        }
        assert!(looked > 1000, "{looked} matches");
    }

    #[test]
    fn the_literal_pass_finds_what_an_overlapping_search_finds_in_its_order() {
        let literals: Vec<String> = RULES
            .iter()
            .flat_map(|r| r.trigger.split('|'))
            .map(str::to_ascii_lowercase)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let ours = DFA::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .start_kind(StartKind::Unanchored)
            .prefilter(false)
            .build(&literals)
            .unwrap();
        let theirs = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&literals)
            .unwrap();
        let mut found = 0;
        for text in corpus()
            .iter()
            .chain([&"sk-ant-api03-SK-AC.ac:A".to_owned()])
        {
            let mut walked = Vec::new();
            literals_in(&ours, text.as_bytes(), &mut |literal, m| {
                walked.push((literal, m));
            });
            let searched: Vec<_> = theirs
                .find_overlapping_iter(text)
                .map(|m| (m.pattern().as_usize(), m.range()))
                .collect();
            assert_eq!(walked, searched, "{text:?}");
            found += walked.len();
        }
        assert!(found > 1000, "{found} literals");
    }

    fn gate_at(gate: Gate, text: &str, literal: &str) -> bool {
        let at = text.find(literal).expect("the literal is in the text");
        gate.open_at(text.as_bytes(), at..at + literal.len())
    }

    #[test]
    fn a_url_is_looked_at_for_a_password_only_where_it_has_credentials() {
        let credentials = |text| gate_at(Gate::Credentials, text, "://");
        assert!(credentials("https://ana:hunter22@git.example.com/x"));
        // A database URL's user may be empty; a password may hold a colon.
        assert!(credentials("redis://:s3cr3t:x@cache:6379"));
        // A blank that is not ASCII may be one the patterns' `\s` stops at: looked at.
        assert!(credentials("https://ana\u{a0}b:pw@host"));
        for without in [
            "https://github.com/ferry/ferry-mcp/pull/42",
            "clone https://ana@git.example.com/ferry.git",
            "ssh://git@git.example.com:22/ferry/ferry-mcp.git",
            "postgres://localhost:5432/ferry",
            "https://ana:@host",
            "https://ana:pw@/path",
            "https://ana:pw@ host",
            "https://ana pw:x@host",
            "https://",
            "https://a:b",
        ] {
            assert!(!credentials(without), "{without:?}");
        }
        assert!(
            find_secrets("https://ana:hunter22@git.example.com/x")
                .iter()
                .any(|m| m.kind == SecretKind::UrlPassword)
        );
    }

    #[test]
    fn a_header_or_a_connection_string_is_looked_at_only_where_a_separator_follows_its_name() {
        let header = |text| gate_at(Gate::Then(b":="), text, "Authorization");
        assert!(header("Authorization: Bearer abc"));
        assert!(header("\"Authorization\" : \"Bearer abc\""));
        assert!(header("Authorization\n\t= token abc"));
        assert!(header("Authorization\u{a0}: Bearer abc"));
        assert!(!header("the bearer token goes in the Authorization header"));
        assert!(!header("Authorization"));
        let password = |text| gate_at(Gate::Then(b"="), text, "Password");
        assert!(password("Server=db;Password = hunter22"));
        assert!(!password("Server=db; Password: hunter22"));
        assert!(!password("the Password prompt hangs"));
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
