//! The redaction rules, as data: what each kind of secret looks like, what must be
//! true of a match for it to count, and samples that test it (`finds`: a text and the
//! secret that must be gone from it; `ignores`: texts where no rule may find
//! anything). Every sample runs as a test (`redact::tests`).
//!
//! Patterns use ASCII classes and ASCII word boundaries (`(?-u:\b)`) only: the regex
//! crate's fast engines then handle any text, non-ASCII included. A group named `s`,
//! when there is one, is the secret (the rest is the context that found it, and
//! stays). Earlier rules win where two find the same bytes (an Anthropic key is
//! also an `sk-` key), and overlapping finds are merged, so nothing of either is left.
//!
//! Sources of the formats are cited per rule and in docs/share.md: the vendors' own
//! documentation where they publish the format, else the open rule sets of gitleaks
//! (config/gitleaks.toml) and trufflehog (pkg/detectors/*), whose patterns these follow.
//! The keys in the samples are made up (random characters in each format's shape).

/// What must also hold of a match.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Check {
    /// The pattern is specific enough.
    None,
    /// Random-looking: letters and digits, at least this much Shannon entropy per
    /// character.
    Random { min_entropy: f64 },
    /// Upper and lower case letters (AWS secret keys, Hugging Face tokens).
    MixedCase,
    /// A password in a URL that is not a placeholder (`user:password@`, `${PASS}`).
    NotPlaceholder,
    /// A secret-named assignment (`API_KEY=…`, `"password": "…"`): the name's last
    /// word says secret and the value is not a placeholder or a reference, and is
    /// random enough (see `redact::assignment`).
    Assignment,
}

/// One kind of secret.
pub struct Rule {
    /// The name in `[REDACTED:<kind>]` and in the report.
    pub kind: &'static str,
    pub pattern: &'static str,
    pub check: Check,
    /// Texts the rule must find a secret in, each with the secret that must be gone.
    pub finds: &'static [(&'static str, &'static str)],
    /// Texts in which no rule may find anything.
    pub ignores: &'static [&'static str],
    /// Where the format comes from.
    pub source: &'static str,
}

pub const RULES: &[Rule] = &[
    Rule {
        kind: "private-key",
        // The whole block: up to its END line, also across literal `\n` escapes (a key
        // inside a JSON string, as in a GCP service-account file printed by a tool);
        // a block cut before its END (`head key.pem`) up to the last line of base64.
        // The BEGIN and END lines: PEM or OpenPGP armor of a private key (RSA, EC,
        // DSA, OPENSSH, ENCRYPTED, PKCS#8's bare `PRIVATE KEY`, PGP `PRIVATE KEY BLOCK`).
        pattern: concat!(
            r"-----BEGIN[ A-Z0-9_-]{0,30}PRIVATE KEY(?: BLOCK)?-----",
            r"(?:(?s:.*?)-----END[ A-Z0-9_-]{0,30}PRIVATE KEY(?: BLOCK)?-----",
            r"|(?:(?:\\r|\\n|[\r\n \t])+(?:[A-Za-z][A-Za-z0-9-]*: [^\r\n\\]*|[A-Za-z0-9+/=]{20,}))+(?:(?:\\r|\\n|[\r\n \t])+[A-Za-z0-9+/]{1,19}={0,2})?)"
        ),
        check: Check::None,
        finds: &[
            (
                "-----BEGIN RSA PRIVATE KEY-----\nKvCiSGuPJ6sG9AHEOVezxZuJPWvHogU5nGYVHWVsUQk4DwgLGNOaeCtL31Ugq+Df\ncgaTMnTC0MrAU8urbFt5misIZHbhS4/FvafhdZxEuhnbzs0z1wNiMg9aW37k5wCn\nVAMH2vWD6qeSPt5Pv74G==\n-----END RSA PRIVATE KEY-----\nafter",
                "cgaTMnTC0MrAU8urbFt5misIZHbhS4",
            ),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDk\n-----END OPENSSH PRIVATE KEY-----",
                "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUA",
            ),
            (
                "-----BEGIN EC PRIVATE KEY-----\r\nHDepQHgI3HLBkbvHEzuPyXQEW88ad3DNBYjvsedonuSsddfrfifiUziXnFAAoeel\r\n-----END EC PRIVATE KEY-----",
                "HDepQHgI3HLBkbvHEzuPyXQEW88ad3",
            ),
            (
                "-----BEGIN ENCRYPTED PRIVATE KEY-----\nK9mqmALOR2HcSGKgVP8Kd0d3mS8gBlKv3azKgaS+m+x/SHuKBD/vok+nPTmZYl2d\n-----END ENCRYPTED PRIVATE KEY-----",
                "K9mqmALOR2HcSGKgVP8Kd0d3mS8gBlKv",
            ),
            (
                "-----BEGIN DSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B2C3D4E5F60718293A4B5C6D7E8F9\n\nKvCiSGuPJ6sG9AHEOVezxZuJPWvHogU5nGYVHWVsUQk4DwgLGNOaeCtL31Ugq+Df\n-----END DSA PRIVATE KEY-----",
                "KvCiSGuPJ6sG9AHEOVezxZuJPWvHogU5",
            ),
            (
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBGXkUyYBCACvGqPdd1IyiuHfP8Y7hzqX1Pz0fKQjNR0dPJr9y0bXNlq8x3yG\n=Xk2P\n-----END PGP PRIVATE KEY BLOCK-----",
                "lQOYBGXkUyYBCACvGqPdd1IyiuHfP8Y7",
            ),
            (
                r#"{"type": "service_account", "private_key_id": "74ae7689447ab57a683536c4499d863386ce10cd", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\nMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu\n-----END PRIVATE KEY-----\n", "client_email": "x@p.iam.gserviceaccount.com"}"#,
                "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
            ),
            (
                "$ head -3 id_rsa\n-----BEGIN RSA PRIVATE KEY-----\nKvCiSGuPJ6sG9AHEOVezxZuJPWvHogU5nGYVHWVsUQk4DwgLGNOaeCtL31Ugq+Df\ncgaTMnTC0MrAU8urbFt5misIZHbhS4/FvafhdZxEuhnbzs0z1wNiMg9aW37k5wCn",
                "cgaTMnTC0MrAU8urbFt5misIZHbhS4",
            ),
        ],
        ignores: &[
            "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n-----END CERTIFICATE-----",
            "a PEM key file starts with -----BEGIN RSA PRIVATE KEY----- and then base64",
        ],
        source: "RFC 7468 (PEM), RFC 4880 §6.2 (OpenPGP armor), OpenSSH PROTOCOL.key; gitleaks private-key",
    },
    Rule {
        kind: "anthropic-key",
        pattern: r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}",
        check: Check::None,
        finds: &[
            (
                "ANTHROPIC_API_KEY=sk-ant-api03-6YYZYn9ZhyiA4uoRgnatmUdjAWtGSU8po_799NksnRH9ucAUsdMlHUvTCQCyEZDz-TddJ8HyS5SUkCnD8zRA9a9SkpXz9AA",
                "TddJ8HyS5SUkCnD8zRA9a9SkpXz9AA",
            ),
            (
                "key sk-ant-admin01-rCaqx9vJupc94tnwlavyT3BlbkFJfErGPmpGXafq0fjzLczb-Xy_z done",
                "fjzLczb-Xy_z",
            ),
        ],
        ignores: &[
            "the sk-ant- prefix",
            "risk-antelope-adjusted-for-the-quarter-and-more",
        ],
        source: "Anthropic API keys (docs.anthropic.com, console key format sk-ant-api03-…); gitleaks anthropic-api-key, anthropic-admin-api-key",
    },
    Rule {
        kind: "openrouter-key",
        pattern: r"(?-u:\b)sk-or-v1-[A-Za-z0-9]{32,}",
        check: Check::None,
        finds: &[(
            "OPENROUTER_API_KEY=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",
            "22f828767efc2f91624a8940f1f836f99eee3692",
        )],
        ignores: &["sk-or-v1-"],
        source: "OpenRouter API keys (openrouter.ai/docs, sk-or-v1- followed by 64 hex); trufflehog openrouter",
    },
    Rule {
        kind: "openai-key",
        pattern: r"(?-u:\b)sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}",
        check: Check::None,
        finds: &[
            (
                "OPENAI_API_KEY=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",
                "PlJhx2jIclHkCiHp",
            ),
            (
                "using sk-svcacct-6bR1IqfEouHgxzNNAL5wIScGebcy8F5n3-YNBDRzrZSgqbjG3uhkWKFLf6xu now",
                "YNBDRzrZSgqbjG3uhkWKFLf6xu",
            ),
        ],
        ignores: &["sk-proj-short"],
        source: "OpenAI API keys (platform.openai.com: project keys sk-proj-, service accounts sk-svcacct-, admin keys sk-admin-); gitleaks openai-api-key",
    },
    Rule {
        kind: "openai-key",
        // Legacy user keys (`T3BlbkFJ` is "OpenAI" in base64) and other vendors' `sk-`
        // keys of the same shape (DeepSeek, Moonshot, ...): random, 32+ characters.
        pattern: r"(?-u:\b)sk-[A-Za-z0-9][A-Za-z0-9_-]{30,}",
        check: Check::Random { min_entropy: 3.2 },
        finds: &[
            (
                "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",
                "rCaqx9vJupc94tnwlavy",
            ),
            (
                "\"apiKey\": \"sk-99724caf4941d4072014b3ce107f80e2\"",
                "99724caf4941d4072014b3ce107f80e2",
            ),
        ],
        ignores: &[
            "risk-adjusted returns, whisk-based-recipes-for-the-long-weekend-and-more",
            "sk-this-is-a-long-hyphenated-slug-without-any-digits",
            "task-0123456789abcdef0123456789abcdef0",
        ],
        source: "OpenAI legacy keys sk-…T3BlbkFJ…; gitleaks openai-api-key; DeepSeek platform docs (sk- + 32 hex)",
    },
    Rule {
        kind: "github-token",
        pattern: r"(?-u:\b)(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}(?-u:\b)",
        check: Check::None,
        finds: &[
            (
                "GITHUB_TOKEN=ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d",
                "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d",
            ),
            (
                "oauth gho_KLzdocJ2isAjIhKtJ0RlgLKOmxgJTeKdNnFR.",
                "KLzdocJ2isAjIhKtJ0RlgLKOmxgJTeKdNnFR",
            ),
            (
                "https://x-access-token:ghs_IBXuDL7DxtpYlSXpfKtHF4vUCsMehGAkWvj7@github.com/o/r",
                "IBXuDL7DxtpYlSXpfKtHF4vUCsMehGAkWvj7",
            ),
        ],
        ignores: &["ghp_ is the prefix of a classic token", "ghp_short123"],
        source: "GitHub: Behind GitHub's new authentication token formats (github.blog, 2021-04); gitleaks github-pat, github-oauth, github-app-token, github-refresh-token",
    },
    Rule {
        kind: "github-token",
        pattern: r"(?-u:\b)github_pat_[A-Za-z0-9_]{22,}",
        check: Check::None,
        finds: &[(
            "token: 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",
            "1f8rESQedUStPKR0CsTy4Qwb8DwkNhFdnXsiVpzz63FfkCzJr4i0B3JrTAw",
        )],
        ignores: &["github_pat_ tokens are fine-grained"],
        source: "GitHub fine-grained personal access tokens (docs.github.com); gitleaks github-fine-grained-pat",
    },
    Rule {
        kind: "gitlab-token",
        pattern: r"(?-u:\b)(?:glpat|gldt|glrt|glptt|glft|glsoat|glcbt)-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_.-]+)?",
        check: Check::None,
        finds: &[
            (
                "GITLAB_TOKEN=glpat-WDtkwtDDb_xHKas1VOqg",
                "WDtkwtDDb_xHKas1VOqg",
            ),
            (
                "glpat-Ab3dE6gH9jK2mN5pQ8sT1vW4y.01.0x1k2m3n4",
                "Ab3dE6gH9jK2mN5pQ8sT1vW4y.01.0x1k2m3n4",
            ),
        ],
        ignores: &["glpat-short"],
        source: "GitLab token overview (docs.gitlab.com/security/tokens: glpat-, gldt-, glrt-, glptt-, glft-, glsoat-, glcbt- prefixes); gitleaks gitlab-pat",
    },
    Rule {
        kind: "aws-access-key",
        pattern: r"(?-u:\b)(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?-u:\b)",
        check: Check::None,
        finds: &[
            (
                "aws_access_key_id = AKIAJPR3UMX3BZNFD24I",
                "AKIAJPR3UMX3BZNFD24I",
            ),
            (
                "\"AccessKeyId\": \"ASIAS7DIK62VSTQQZPT6\"",
                "ASIAS7DIK62VSTQQZPT6",
            ),
        ],
        ignores: &[
            "AKIA is the prefix of long-term keys",
            "AKIAJPR3UMX3BZNFD24",
            "XAKIAJPR3UMX3BZNFD24I",
        ],
        source: "AWS IAM identifiers, unique ID prefixes (docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html); gitleaks aws-access-token",
    },
    Rule {
        kind: "aws-secret-key",
        // Named as one (`aws_secret_access_key`, `SecretAccessKey`) ...
        pattern: r#"(?i-u:aws[A-Za-z0-9_.-]{0,20}secret[A-Za-z0-9_.-]{0,20}|secret_?access_?key)(?:\\?["'])?[ \t]*(?::=|=>|=|:)[ \t]*(?:\\?["'])?(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
        check: Check::MixedCase,
        finds: &[
            (
                "aws_secret_access_key = YpvujA+C5Q52ryFlwRlOEVHzc0X0AWIRh+JUqBlI\n",
                "YpvujA+C5Q52ryFlwRlOEVHzc0X0AWIRh+JUqBlI",
            ),
            (
                "\"SecretAccessKey\": \"YpvujA+C5Q52ryFlwRlOEVHzc0X0AWIRh+JUqBlI\",",
                "YpvujA+C5Q52ryFlwRlOEVHzc0X0AWIRh+JUqBlI",
            ),
        ],
        ignores: &["aws_secret_hash = 3f786850e387550fdab836ed7e6dc881de23001b"],
        source: "AWS credentials file and STS output (docs.aws.amazon.com/cli/latest/userguide/cli-configure-files.html); gitleaks aws-secret-access-key context",
    },
    Rule {
        kind: "aws-secret-key",
        // ... or written just after an access key (CSV, `aws configure` answers).
        pattern: r#"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}[\s,;:|'"=]{1,12}(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
        check: Check::MixedCase,
        finds: &[(
            "AKIAJPR3UMX3BZNFD24I,YpvujA+C5Q52ryFlwRlOEVHzc0X0AWIRh+JUqBlI\n",
            "YpvujA+C5Q52ryFlwRlOEVHzc0X0AWIRh+JUqBlI",
        )],
        ignores: &[],
        source: "AWS access key CSV (Access key ID,Secret access key); trufflehog aws detector",
    },
    Rule {
        kind: "google-api-key",
        pattern: r"(?-u:\b)AIza[0-9A-Za-z_-]{35}",
        check: Check::None,
        finds: &[(
            "key=AIzaua_5ZMs1SWOpQaPRYpzbLGViYXjU2JgJngK&q=x",
            "AIzaua_5ZMs1SWOpQaPRYpzbLGViYXjU2JgJngK",
        )],
        ignores: &["AIza is how Google API keys begin"],
        source: "Google Cloud API keys (cloud.google.com/docs/authentication/api-keys); gitleaks gcp-api-key",
    },
    Rule {
        kind: "gcp-service-account",
        // The key's id beside its `private_key` (the key itself is a private-key block).
        pattern: r#"\\?"private_key_id\\?"[ \t]*:[ \t]*\\?"(?P<s>[a-f0-9]{40})"#,
        check: Check::None,
        finds: &[(
            r#"{"private_key_id": "74ae7689447ab57a683536c4499d863386ce10cd"}"#,
            "74ae7689447ab57a683536c4499d863386ce10cd",
        )],
        ignores: &[],
        source: "Google service account key files (cloud.google.com/iam/docs/keys-create-delete); gitleaks gcp-service-account",
    },
    Rule {
        kind: "slack-token",
        pattern: r"(?-u:\b)(?:xox[abpors]-[0-9]{6,}-[A-Za-z0-9-]{8,}|xoxe(?:\.xox[bp])?-[0-9]-[A-Za-z0-9]{60,}|xapp-[0-9]-[A-Z0-9]+-[0-9]+-[A-Za-z0-9]+)",
        check: Check::None,
        finds: &[
            (
                "SLACK_BOT_TOKEN=xoxb-366764020679-7016877313228-Rg80USP2W5DfJXcaYioK6cPT",
                "Rg80USP2W5DfJXcaYioK6cPT",
            ),
            (
                "xoxp-424861114893-643900847453-7838306400376-287db7f1adbc60926f6967e7893f57fd",
                "287db7f1adbc60926f6967e7893f57fd",
            ),
        ],
        ignores: &["xoxo-gossip-girl", "xoxb- tokens are bot tokens"],
        source: "Slack token types (api.slack.com/concepts/token-types); gitleaks slack-bot-token, slack-user-token, slack-app-token",
    },
    Rule {
        kind: "slack-webhook",
        pattern: r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}",
        check: Check::None,
        finds: &[(
            "curl -X POST https://hooks.slack.com/services/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 -d @m.json",
            "7kvmlP7HVDctQUy1xvCkgafr",
        )],
        ignores: &["https://hooks.slack.com/ is where webhooks live"],
        source: "Slack incoming webhooks (api.slack.com/messaging/webhooks); gitleaks slack-webhook-url",
    },
    Rule {
        kind: "stripe-key",
        pattern: r"(?-u:\b)(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}",
        check: Check::None,
        finds: &[
            (
                "STRIPE_SECRET_KEY=sk_live_fwA94hJ9WnywX0t0ZBfdTEmx",
                "fwA94hJ9WnywX0t0ZBfdTEmx",
            ),
            (
                "rk_live_I6CmuxV5EbOApZOXzcycDeZ6",
                "I6CmuxV5EbOApZOXzcycDeZ6",
            ),
        ],
        ignores: &[
            "pk_live_fwA94hJ9WnywX0t0ZBfdTEmx is a publishable key",
            "sk_live_ keys are secret",
        ],
        source: "Stripe API keys (docs.stripe.com/keys: sk_live_, rk_live_ restricted keys); gitleaks stripe-access-token",
    },
    Rule {
        kind: "stripe-webhook-secret",
        pattern: r"(?-u:\b)whsec_[A-Za-z0-9+/=]{24,}",
        check: Check::None,
        finds: &[(
            "STRIPE_WEBHOOK_SECRET=whsec_dqmVe5Mvxrv99NcqVTSu7rtaUWM6ZO88",
            "dqmVe5Mvxrv99NcqVTSu7rtaUWM6ZO88",
        )],
        ignores: &["whsec_ is the signing secret's prefix"],
        source: "Stripe webhook signing secrets (docs.stripe.com/webhooks#verify-events)",
    },
    Rule {
        kind: "npm-token",
        pattern: r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)",
        check: Check::None,
        finds: &[(
            "//registry.npmjs.org/:_authToken=npm_eb0ogET9D9XyYq6B0Fi7FlaZ7Vt0SXjMpu3u",
            "npm_eb0ogET9D9XyYq6B0Fi7FlaZ7Vt0SXjMpu3u",
        )],
        ignores: &[
            "npm_config_cache=/tmp/npm",
            "npm_package_json_version_number_of_the_app1",
        ],
        source: "npm access tokens (docs.npmjs.com/about-access-tokens; github.blog 2021-09 new npm token format); gitleaks npm-access-token",
    },
    Rule {
        kind: "pypi-token",
        pattern: r"(?-u:\b)pypi-AgE[A-Za-z0-9_-]{50,}",
        check: Check::None,
        finds: &[(
            "password = pypi-AgEIcHlwaS5vcmc6UkzYuF0ie9Pu2njHkAm1-5wDr16EpLLJIVGHz4FxFEtKyPiYGFDm7ena8D5",
            "UkzYuF0ie9Pu2njHkAm1-5wDr16EpLLJIVGHz4FxFEtKyPiYGFDm7ena8D5",
        )],
        ignores: &["pypi-AgE is a macaroon's start"],
        source: "PyPI API tokens (pypi.org/help/#apitoken: macaroons prefixed pypi-); gitleaks pypi-upload-token",
    },
    Rule {
        kind: "huggingface-token",
        pattern: r"(?-u:\b)hf_[A-Za-z0-9]{30,}(?-u:\b)",
        check: Check::MixedCase,
        finds: &[(
            "HF_TOKEN=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",
            "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",
        )],
        ignores: &[
            "from huggingface_hub import hf_hub_download",
            "hf_transformersmodelcachedirectory",
        ],
        source: "Hugging Face user access tokens (huggingface.co/docs/hub/security-tokens); gitleaks huggingface-access-token",
    },
    Rule {
        kind: "supabase-token",
        pattern: r"(?-u:\b)(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,})",
        check: Check::None,
        finds: &[(
            "SUPABASE_ACCESS_TOKEN=sbp_8160adb59261ff2d3c425c8d99d19bdd0b6cc60d",
            "8160adb59261ff2d3c425c8d99d19bdd0b6cc60d",
        )],
        ignores: &["sbp_ is a personal access token"],
        source: "Supabase access tokens and API keys (supabase.com/docs/guides/api/api-keys); trufflehog supabasetoken",
    },
    Rule {
        kind: "telegram-bot-token",
        pattern: r"(?-u:\b)(?P<s>[0-9]{5,16}:A[A-Za-z0-9_-]{34})(?:[^A-Za-z0-9_-]|$)",
        check: Check::None,
        finds: &[(
            "TELEGRAM_BOT_TOKEN=2611695722:AAbgsYlVvsSKuvinX_zMqf9OgXluCZz8xBf\n",
            "2611695722:AAbgsYlVvsSKuvinX_zMqf9OgXluCZz8xBf",
        )],
        ignores: &["at 12:34:56 the build 2611695722 passed"],
        source: "Telegram Bot API tokens (core.telegram.org/bots/api#authorizing-your-bot); gitleaks telegram-bot-api-token",
    },
    Rule {
        kind: "jwt",
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        check: Check::None,
        finds: &[(
            "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSIsImlhdCI6MTUxNjIzOTAyMn0.ZuXTptFyfePpX6N1NF2XV54wca_7E56w8ZniqT3Ul4f",
            "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSIsImlhdCI6MTUxNjIzOTAyMn0",
        )],
        ignores: &["eyJ is base64 for {\""],
        source: "RFC 7519 (JWT) with RFC 7515 compact serialization; gitleaks jwt",
    },
    Rule {
        kind: "url-password",
        pattern: r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:@/?#"'<>\\]{0,100}:(?P<s>[^\s@/?#"'<>\\]{1,200})@[A-Za-z0-9.\[\]_-]"#,
        check: Check::NotPlaceholder,
        finds: &[
            (
                "DATABASE_URL=postgres://app:Zq8v!kP2mW@db.internal:5432/app",
                "Zq8v!kP2mW",
            ),
            ("redis://:s3cr3tPa55@cache:6379/0", "s3cr3tPa55"),
            (
                "git clone https://ada:tok3nValue9@git.example.com/r.git",
                "tok3nValue9",
            ),
        ],
        ignores: &[
            "postgres://user:password@localhost/db",
            "mysql://root:${MYSQL_PASSWORD}@db/app",
            "https://user:<password>@host/",
            "amqp://guest:****@rabbit/",
            "http://localhost:8080/path@v2",
            "git@github.com:owner/repo.git",
            "ssh://git@host:22/repo",
        ],
        source: "RFC 3986 §3.2.1 (userinfo); gitleaks generic URL credentials",
    },
    Rule {
        kind: "bearer-token",
        pattern: r#"(?i-u:authorization)(?:\\?["'])?[ \t]*[:=][ \t]*(?:\\?["'])?(?i-u:bearer|token|basic)[ \t]+(?P<s>[A-Za-z0-9._~+/-]{16,}=*)"#,
        check: Check::Random { min_entropy: 3.0 },
        finds: &[(
            "curl -H 'Authorization: Bearer 9f8e7d6c5b4a39281716aBcDeF' https://api",
            "9f8e7d6c5b4a39281716aBcDeF",
        )],
        ignores: &[
            "curl -H \"Authorization: Bearer $API_TOKEN\" https://api",
            "Authorization: Bearer <token-goes-here-please>",
        ],
        source: "RFC 6750 §2.1 (Bearer), RFC 7617 (Basic); gitleaks generic-api-key (authorization header)",
    },
    Rule {
        kind: "secret-assignment",
        // Found from its keyword (lower, Capitalized or UPPER case: a literal the
        // regex crate finds fast), then the separator: `=`, `:=`, `=>`, or a colon
        // after a quote (JSON) or before a space or quote (YAML); a bare `name:value`
        // is a URL's user and password. The name is the identifier the keyword ends
        // (`redact::name_before`).
        pattern: r#"(?P<kw>key|Key|KEY|token|Token|TOKEN|secret|Secret|SECRET|password|Password|PASSWORD|passwd|Passwd|PASSWD|passphrase|Passphrase|PASSPHRASE|pwd|Pwd|PWD|pass|Pass|PASS|credentials|Credentials|CREDENTIALS|credential|Credential|CREDENTIAL)(?:\\?["'][ \t]*(?::=|=>|=|:)|[ \t]*(?::=|=>|=)|[ \t]*:[ \t]|[ \t]*:\\?["'])[ \t]*(?:\\?["'])?(?P<s>[A-Za-z0-9+/=_.~!@#$%^&*?-]{6,})"#,
        check: Check::Assignment,
        finds: &[
            (
                "export OPENWEATHER_API_KEY=c0a9f8e7d6b5a4c3b2a1f0e9d8c7b6a5",
                "c0a9f8e7d6b5a4c3b2a1f0e9d8c7b6a5",
            ),
            (
                "\"client_secret\": \"cOif7UuXUGfdWG5yP8Yib2eNUS0hmi4F\"",
                "cOif7UuXUGfdWG5yP8Yib2eNUS0hmi4F",
            ),
            ("DB_PASSWORD='hunter2!x'", "hunter2!x"),
            ("password: Tr0ub4dor&3", "Tr0ub4dor&3"),
            (
                "apiKey: \"a8F3kL9qZ2xV7mN4bC6dR1tY5uW0pE3s\"",
                "a8F3kL9qZ2xV7mN4bC6dR1tY5uW0pE3s",
            ),
            (
                "refresh_token=1//0gLx9eR2kT7vQ4mZ8pW3nB6yC5hJ",
                "1//0gLx9eR2kT7vQ4mZ8pW3nB6yC5hJ",
            ),
            (
                r#"{\"auth_token\": \"Zx81mQ2pL0vN9bT4yR7cW3kD6fH5sJ1a\"}"#,
                "Zx81mQ2pL0vN9bT4yR7cW3kD6fH5sJ1a",
            ),
        ],
        ignores: &[
            "max_tokens: 4096",
            "PRIMARY_KEY = \"id\"",
            "{\"key\": \"value\", \"list\": [1, 2, 3]}",
            "apiKey: process.env.API_KEY",
            "token = self.token",
            "secret_key = settings.SECRET_KEY",
            "password: string;",
            "PWD=/tmp/build.4f8a9c2e1b7d",
            "next_page_token: CiAKGjBpNDd2Nmp2Zml2cXRqc2JtZQ",
            "public_key: MCowBQYDK2VwAyEAq8v1Zp0xYk2mT9bN3cR5dW7fH1jL4sQ6",
            "monkey: bananas1234567890abcdef",
            "sort_key = created_at_2024_01_01",
            "API_KEY=your-api-key-here-1234",
            "password = ********",
            "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
            "cache_key: v1-deps-3f786850e387550fdab836ed7e6dc881",
            "tokens: 12345678901234567890",
            "key: 6f1c0b5e-2a3d-4c7b-9e8f-0a1b2c3d4e5f",
        ],
        source: "gitleaks generic-api-key (secret-named keyword + entropy); trufflehog's keyword-proximity detectors",
    },
];

/// Text that no rule may redact: ordinary identifiers that look a little like
/// secrets (tested as a whole, and counted by the bench over generated sessions).
pub const DECOYS: &[&str] = &[
    "commit 3f786850e387550fdab836ed7e6dc881de23001b (HEAD -> main)",
    "git checkout 5d41402a",
    "session 6f1c0b5e-2a3d-4c7b-9e8f-0a1b2c3d4e5f started",
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "sha256sum: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  -",
    "color: #ff00aa; background: #1f2328;",
    "risk-adjusted, task-oriented, disk-backed, whisk-ready, ask-me-anything",
    "the sk- prefix, the ghp_ prefix, AKIA and AIza and xoxb- and hf_ and npm_ and glpat-",
    "base64: aGVsbG8gd29ybGQ=",
    "docker pull ghcr.io/owner/image@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",
    "request_id=req_011CUYXa9Gq8a4Vf7Hj2kLmN and msg_01XFDUDYJgAACzvnptvVoYEL",
    "https://docs.example.com/page?id=123&ref=abc@2x.png",
    "user@example.com wrote at 12:34:56",
    "/home/dev/src/fen-fs/target/debug/deps/libregex-8a7b6c5d4e3f2a1b.rlib",
    "npm_config_cache=/home/dev/.npm and hf_hub_download(repo_id)",
    "uuid: 123e4567-e89b-12d3-a456-426614174000, id: 01HZX3T9V4A5B6C7D8E9F0G1H2",
    "content-length: 12345678, etag: \"33a64df551425fcc55e4d42a148795d9f25f89d4\"",
    "const token = await getToken(); let api_key = env::var(\"API_KEY\")?;",
    "password=os.getenv(\"DB_PASSWORD\") and \"token_type\": \"Bearer\", input_tokens=1234",
    "if (!password) throw new Error('password required'); const secret = crypto.randomUUID();",
    "usage: {\"input_tokens\": 1200, \"cache_read_input_tokens\": 53000, \"output_tokens\": 88}",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ada@host",
];
