#!/usr/bin/env python3
"""Writes the guard's corpus: secrets.txt, code.txt and ordinary.txt beside this script.

Every value is fake but real-shaped (prefixes, lengths, alphabets, and the checksums of the
formats that have one: GitHub's and npm's CRC-32, age's bech32). The output is deterministic,
so running it again changes nothing; the files are committed and the tests never run this.

    python3 ferry-mcp-core/tests/guard_corpus/generate.py
"""

import base64
import binascii
import json
import pathlib
import random
import string

HERE = pathlib.Path(__file__).resolve().parent
R = random.Random(20260815)

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
BASE62 = DIGITS + UPPER + LOWER  # the order GitHub's checksum digits use
ALNUM = UPPER + LOWER + DIGITS
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"


def pick(alphabet, n):
    return "".join(R.choice(alphabet) for _ in range(n))


def escape(text):
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def b62(n, width):
    out = ""
    while n:
        n, d = divmod(n, 62)
        out = BASE62[d] + out
    return out.rjust(width, "0")


def crc_token(prefix, random_len=30):
    body = pick(ALNUM, random_len)
    return prefix + body + b62(binascii.crc32(body.encode()), 6)


def b64url(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def bech32_encode(hrp, data8):
    charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
    gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]

    def polymod(values):
        chk = 1
        for v in values:
            top = chk >> 25
            chk = (chk & 0x1FFFFFF) << 5 ^ v
            for i in range(5):
                chk ^= gen[i] if (top >> i) & 1 else 0
        return chk

    acc, bits, data5 = 0, 0, []
    for b in data8:
        acc = (acc << 8) | b
        bits += 8
        while bits >= 5:
            bits -= 5
            data5.append((acc >> bits) & 31)
    if bits:
        data5.append((acc << (5 - bits)) & 31)
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    mod = polymod(expanded + data5 + [0] * 6) ^ 1
    check = [(mod >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(charset[d] for d in data5 + check)


def pem_lines(data, width=64):
    text = base64.b64encode(data).decode()
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


# Sentences a secret arrives in: bare, quoted, in JSON, in a command, mid-sentence.
CONTEXTS = [
    "{s}",
    "here is the key: {s}",
    "use {s} for the deploy",
    "the value is `{s}` (from the vault)",
    '{{"key": "{s}"}}',
    "{s} <- rotated yesterday",
    "try again with {s}.",
    "curl -H 'X-Api-Key: {s}' https://api.example.com/v1/items",
    "config:\n  key: {s}\n  region: eu-west-1",
    "Found it in the old .env, {s}, still valid I think",
]


def in_context(value, i):
    return CONTEXTS[i % len(CONTEXTS)].format(s=value)


def secrets():
    rows = []

    def add(kind, values, contexts=None):
        for i, v in enumerate(values):
            text = in_context(v, i) if contexts is None else contexts[i % len(contexts)].format(s=v)
            rows.append((kind, text))

    add("github_token", [crc_token(R.choice(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"])) for _ in range(20)])
    add(
        "github_fine_grained_token",
        [
            "github_pat_11" + pick(UPPER + DIGITS, 20) + "_" + (lambda b: b + b62(binascii.crc32(b.encode()), 6))(pick(ALNUM, 53))
            for _ in range(12)
        ],
    )
    add(
        "gitlab_token",
        ["glpat-" + pick(URLSAFE, 20) for _ in range(6)]
        + ["glpat-" + pick(URLSAFE, 27) + ".01." + pick(HEX, 2) + pick(LOWER + DIGITS, 7) for _ in range(3)]
        + [R.choice(["gldt-", "glrt-", "glptt-"]) + pick(URLSAFE, 20) for _ in range(3)],
    )
    add(
        "anthropic_api_key",
        ["sk-ant-api03-" + pick(URLSAFE, 93) + "AA" for _ in range(9)] + ["sk-ant-admin01-" + pick(URLSAFE, 93) + "AA" for _ in range(3)],
    )
    add(
        "openai_api_key",
        ["sk-" + pick(ALNUM, 20) + "T3BlbkFJ" + pick(ALNUM, 20) for _ in range(5)]
        + ["sk-proj-" + pick(URLSAFE, 74) + "T3BlbkFJ" + pick(URLSAFE, 74) for _ in range(5)]
        + ["sk-svcacct-" + pick(URLSAFE, 58) + "T3BlbkFJ" + pick(URLSAFE, 58) for _ in range(2)],
    )
    add("google_api_key", ["AIzaSy" + pick(URLSAFE, 33) for _ in range(12)])
    add("google_oauth", ["GOCSPX-" + pick(URLSAFE, 28) for _ in range(6)] + ["ya29." + pick(URLSAFE, 120) for _ in range(6)])
    add("huggingface_token", ["hf_" + pick(UPPER + LOWER, 34) for _ in range(12)])
    add("aws_access_key_id", [R.choice(["AKIA", "ASIA"]) + pick(UPPER + "234567", 16) for _ in range(12)])
    add(
        "aws_secret_access_key",
        [pick(B64, 40) for _ in range(12)],
        [
            "aws_secret_access_key = {s}",
            "AWS_SECRET_ACCESS_KEY={s}",
            '{{"AccessKeyId": "ASIA' + pick(UPPER + "234567", 16) + '", "SecretAccessKey": "{s}"}}',
            "[default]\naws_access_key_id = AKIA" + pick(UPPER + "234567", 16) + "\naws_secret_access_key = {s}",
            "key id AKIA" + pick(UPPER + "234567", 16) + " and the secret {s}",
            "export AWS_SECRET_ACCESS_KEY='{s}'",
        ],
    )
    add(
        "slack_token",
        ["xoxb-" + pick(DIGITS, 12) + "-" + pick(DIGITS, 13) + "-" + pick(ALNUM, 24) for _ in range(6)]
        + ["xoxp-" + pick(DIGITS, 12) + "-" + pick(DIGITS, 12) + "-" + pick(DIGITS, 13) + "-" + pick(HEX, 32) for _ in range(4)]
        + ["xapp-1-A" + pick(UPPER + DIGITS, 10) + "-" + pick(DIGITS, 13) + "-" + pick(HEX, 64) for _ in range(2)],
    )
    add(
        "slack_webhook",
        ["https://hooks.slack.com/services/T" + pick(UPPER + DIGITS, 8) + "/B" + pick(UPPER + DIGITS, 10) + "/" + pick(ALNUM, 24) for _ in range(12)],
    )
    add("npm_token", [crc_token("npm_") for _ in range(12)])
    add(
        "pypi_token",
        ["pypi-AgEIcHlwaS5vcmc" + b64url(R.randbytes(R.randint(60, 140))) for _ in range(10)]
        + ["pypi-AgENdGVzdC5weXBpLm9yZw" + b64url(R.randbytes(80)) for _ in range(2)],
    )
    add(
        "stripe_key",
        ["sk_live_" + pick(ALNUM, R.choice([24, 99])) for _ in range(5)]
        + ["rk_live_" + pick(ALNUM, 24) for _ in range(3)]
        + ["sk_test_" + pick(ALNUM, 24) for _ in range(2)]
        + ["whsec_" + pick(ALNUM, 32) for _ in range(2)],
    )
    add("twilio_api_key", ["SK" + pick(HEX, 32) for _ in range(12)])
    add(
        "twilio_auth_token",
        [pick(HEX, 32) for _ in range(12)],
        [
            "TWILIO_AUTH_TOKEN={s}",
            "account AC" + pick(HEX, 32) + " auth token {s}",
            "client = Client('AC" + pick(HEX, 32) + "', '{s}')",
            'twilio_auth_token: "{s}"',
        ],
    )
    add("sendgrid_api_key", ["SG." + pick(URLSAFE, 22) + "." + pick(URLSAFE, 43) for _ in range(12)])
    add(
        "discord_bot_token",
        [
            b64url(str(R.randint(10**16, 10**19)).encode()) + "." + pick(URLSAFE, 6) + "." + pick(URLSAFE, R.choice([27, 38]))
            for _ in range(12)
        ],
    )
    add(
        "discord_webhook",
        ["https://discord.com/api/webhooks/" + pick(DIGITS, 18) + "/" + pick(URLSAFE, 68) for _ in range(12)],
    )
    add("telegram_bot_token", [pick(DIGITS, R.choice([9, 10])) + ":AA" + pick(URLSAFE, 33) for _ in range(12)])
    add("shopify_token", [R.choice(["shpat_", "shpss_", "shpca_"]) + pick(HEX, 32) for _ in range(12)])
    add("digitalocean_token", [R.choice(["dop_v1_", "doo_v1_"]) + pick(HEX, 64) for _ in range(12)])
    add(
        "azure_storage_key",
        [base64.b64encode(R.randbytes(64)).decode() for _ in range(12)],
        [
            "DefaultEndpointsProtocol=https;AccountName=ferrylogs;AccountKey={s};EndpointSuffix=core.windows.net",
            "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=backup01;AccountKey={s}",
        ],
    )
    add("age_secret_key", [bech32_encode("age-secret-key-", R.randbytes(32)).upper() for _ in range(12)])
    add(
        "ferry_secret_key",
        [pick(HEX, 64) for _ in range(12)],
        [
            '{{\n  "format": "ferry-key/1",\n  "public": "' + pick(HEX, 64) + '",\n  "secret": "{s}"\n}}',
            'the key file says "secret": "{s}"',
        ],
    )

    def jwt():
        alg = R.choice(["HS256", "RS256", "ES256", "EdDSA"])
        header = {"alg": alg, "typ": "JWT"}
        if R.random() < 0.5:
            header["kid"] = pick(HEX, 16)
        payload = {"sub": pick(DIGITS, 8), "iat": 1_790_000_000 + R.randint(0, 10**7), "scope": "orders:read"}
        sig_len = {"HS256": 32, "RS256": 256, "ES256": 64, "EdDSA": 64}[alg]
        return ".".join(
            [b64url(json.dumps(header, separators=(",", ":")).encode()), b64url(json.dumps(payload).encode()), b64url(R.randbytes(sig_len))]
        )

    add("jwt", [jwt() for _ in range(12)], CONTEXTS + ["Authorization: Bearer {s}"])

    def rsa_like(head, der_prefix, size):
        return head, der_prefix + R.randbytes(size)

    private = []
    for i in range(12):
        label, data = R.choice(
            [
                rsa_like("RSA PRIVATE KEY", b"\x30\x82\x04\xa4\x02\x01\x00\x02\x82\x01\x01\x00", 1180),
                rsa_like("PRIVATE KEY", b"\x30\x82\x04\xbe\x02\x01\x00\x30\x0d\x06\x09", 1200),
                rsa_like("EC PRIVATE KEY", b"\x30\x77\x02\x01\x01\x04\x20", 110),
                rsa_like("ENCRYPTED PRIVATE KEY", b"\x30\x82\x05\x1c\x30\x4e\x06\x09", 1300),
            ]
        )
        body = pem_lines(data)
        block = f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
        if i % 4 == 1:
            block = json.dumps({"type": "service_account", "private_key": block + "\n"})[1:-1]
            block = "{" + block + "}"
        elif i % 4 == 2:
            # pasted but cut off before the END line
            block = f"-----BEGIN {label}-----\n" + "\n".join(body.split("\n")[:3])
        elif i % 4 == 3:
            block = "the old deploy key:\n" + block + "\nplease use it for now"
        private.append(block)
    add("private_key", private, ["{s}"])

    def openssh():
        data = b"openssh-key-v1\x00\x00\x00\x00\x04none\x00\x00\x00\x04none" + R.randbytes(360)
        return "-----BEGIN OPENSSH PRIVATE KEY-----\n" + pem_lines(data, 70) + "\n-----END OPENSSH PRIVATE KEY-----"

    add("openssh_private_key", [openssh() for _ in range(12)], ["{s}", "my id_ed25519:\n{s}", "{s}\n"])

    def pgp():
        data = b"\x95\x03\x98\x04" + R.randbytes(900)
        crc = base64.b64encode(R.randbytes(3)).decode()
        head = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n"
        if R.random() < 0.5:
            head += "Comment: exported for the release box\n"
        return head + "\n" + pem_lines(data) + "\n=" + crc + "\n-----END PGP PRIVATE KEY BLOCK-----"

    add("pgp_private_key", [pgp() for _ in range(12)], ["{s}", "signing key for releases:\n{s}"])

    words = ["app", "ferry", "orders", "admin", "svc", "reader", "root", "guest", "deploy"]

    def password():
        return R.choice(["pass", "hunter2", pick(ALNUM, R.randint(12, 24)), pick(ALNUM + "!*-_", 16)])

    db = []
    for _ in range(14):
        scheme = R.choice(["postgres", "postgresql", "mysql", "mongodb+srv", "mongodb", "redis", "rediss", "amqp", "amqps", "mariadb"])
        user = "" if scheme.startswith("redis") and R.random() < 0.5 else R.choice(words)
        host = R.choice(["db", "localhost", "10.0.3.12", "cluster0.ab1cd.mongodb.net", "rabbit.internal", "cache-1.prod"])
        port = {"postgres": 5432, "postgresql": 5432, "mysql": 3306, "mariadb": 3306, "redis": 6379, "rediss": 6380, "amqp": 5672, "amqps": 5671}.get(scheme)
        url = f"{scheme}://{user}:{password()}@{host}" + (f":{port}" if port else "") + "/" + R.choice(words)
        db.append(url)
    add("database_url", db, ["{s}", "DATABASE_URL={s}", "connect with {s} and run the migration", "url: \"{s}\""])

    urls = [
        f"https://{R.choice(words)}:{pick(ALNUM, 20)}@git.example.com/ferry/ferry-mcp.git",
        f"https://x-access-token:{pick(ALNUM, 32)}@gitea.internal/org/repo.git",
        f"ftp://{R.choice(words)}:{password()}@ftp.example.org/releases/",
        f"https://{R.choice(words)}:{password()}@registry.example.com/v2/",
        f"smtp://mailer:{pick(ALNUM, 16)}@smtp.example.com:587",
        f"wss://bot:{pick(ALNUM, 24)}@stream.example.net/feed",
    ] * 2
    add("url_password", [u.replace("REPLACE", pick(ALNUM, 4)) for u in urls], ["{s}", "clone {s} for the fix", "remote: {s}"])
    add(
        "bearer_token",
        [pick(ALNUM + "._-", R.randint(32, 64)) for _ in range(12)],
        [
            "Authorization: Bearer {s}",
            'curl -H "Authorization: Bearer {s}" https://api.example.com/orders',
            "headers: {{ authorization: 'token {s}' }}",
            "send Bearer {s} with each call",
        ],
    )
    env_keys = [
        "API_KEY",
        "SECRET",
        "PASSWORD",
        "DB_PASSWORD",
        "SECRET_KEY",
        "DJANGO_SECRET_KEY",
        "CLIENT_SECRET",
        "JWT_SECRET",
        "SESSION_SECRET",
        "MAILGUN_API_KEY",
        "spring.datasource.password",
        "app.secret",
        "ACCESS_KEY",
        "PRIVATE_KEY",
        "auth_token",
        "SIGNING_KEY",
    ]
    env = []
    for i, key in enumerate(env_keys * 2):
        value = pick(HEX, 64) if i % 5 == 4 else pick(ALNUM + "+/_-!", R.randint(16, 48))
        form = R.choice(["{k}={v}", 'export {k}="{v}"', "{k}: {v}", '"{k}": "{v}"', "{k} = '{v}'"])
        env.append(form.format(k=key, v=value))
    add("env_secret", env, ["{s}", "in .env:\n{s}\nDEBUG=false", "set {s} in the runner"])
    # Shapes met outside the contexts above: tokens in remotes and query strings, short
    # typed passwords, a key with its prefix cut off.
    add(
        "github_token",
        [crc_token("ghp_") for _ in range(6)],
        [
            "git remote set-url origin https://{s}@github.com/ferry/ferry-mcp.git",
            "(`{s}`)",
            "token={s}&scope=repo",
            "export GH_TOKEN={s}; gh pr list",
            "[{s}]",
            '"{s}",',
        ],
    )
    add("npm_token", [crc_token("npm_") for _ in range(2)], ["//registry.npmjs.org/:_authToken={s}"])
    add(
        "openai_api_key",
        [pick(ALNUM, 20) + "T3BlbkFJ" + pick(ALNUM, 20) for _ in range(2)],
        ["the new key is {s} (sk- prefix dropped)"],
    )
    add("jwt", [jwt() for _ in range(2)], ["Cookie: session={s}; Path=/"])
    add(
        "env_secret",
        [pick(ALNUM, 10) + "!" + pick(ALNUM, 8) for _ in range(2)]
        + [pick(ALNUM, 6) + "#" + pick(ALNUM, 6) for _ in range(2)]
        + [pick(ALNUM, 32) for _ in range(2)],
        [
            "Server=tcp:ferry.database.windows.net;Database=orders;User ID=admin;Password={s};",
            "DB_PASS={s}",
            "password: '{s}'",
            "PGPASSWORD={s} psql -h db",
            "https://api.example.com/v1/items?api_key={s}&limit=20",
            '"client_secret":"{s}"',
        ],
    )
    return rows


# --- code -------------------------------------------------------------------------------

CODE = {
    "rust": [
        """fn main() {
    println!("hello, fleet");
}""",
        """pub fn check(text: &str, used_as: TextUse) -> Result<(), GuardRefusal> {
    if let Some(kind) = secrets::first_secret(text) {
        return Err(GuardRefusal::Secret { kind });
    }
    Ok(())
}""",
        """use std::collections::BTreeMap;
use std::fmt;

#[derive(Debug, Clone)]
pub struct Roster {
    members: BTreeMap<String, Level>,
}""",
        """impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}""",
        """let mut total = 0;
for entry in entries {
    total += entry.len();
}
assert_eq!(total, 42);""",
        """match outcome {
    Ok(value) => value,
    Err(err) => return Err(err.into()),
}""",
        """#[test]
fn a_claimed_order_cannot_be_claimed_twice() {
    let board = Board::default();
    board.claim(1, "alice").unwrap();
    assert!(board.claim(1, "bob").is_err());
}""",
        """fn main() {
}""",
        """enum State {
    Open,
    Claimed { by: AgentName },
    Done,
}""",
        """pub(crate) async fn poll(&mut self) -> io::Result<usize> {
    let n = self.reader.read(&mut self.buf).await?;
    Ok(n)
}""",
        """mod tests;
pub mod guard;
pub use guard::check;""",
    ],
    "python": [
        """def parse(line):
    parts = line.split("\\t")
    return parts[0], parts[1]""",
        """import json
import sys

for line in sys.stdin:
    print(json.loads(line)["id"])""",
        """class Board:
    def __init__(self):
        self.orders = {}

    def claim(self, order_id, agent):
        self.orders[order_id] = agent""",
        """from pathlib import Path

root = Path(__file__).parent
files = sorted(root.glob("*.txt"))""",
        """if __name__ == "__main__":
    main()""",
        """with open("corpus.txt") as f:
    lines = f.read().splitlines()
counts = {}
for line in lines:
    counts[line] = counts.get(line, 0) + 1""",
        """try:
    value = int(text)
except ValueError:
    value = 0""",
        """import os
print(os.getcwd())""",
        """x = compute()
y = transform(x)
save(y)""",
        """def f(x):
    return x * 2""",
        """async def fetch(session, url):
    async with session.get(url) as response:
        return await response.text()""",
        """@dataclass
class Order:
    id: int
    title: str""",
    ],
    "javascript": [
        """const a = 1;
const b = 2;""",
        """function add(a, b) {
  return a + b;
}""",
        """const express = require('express');
const app = express();
app.get('/', (req, res) => res.send('ok'));
app.listen(3000);""",
        """import { readFile } from 'node:fs/promises';

const text = await readFile('orders.json', 'utf8');
console.log(JSON.parse(text).length);""",
        """export default async function handler(req, res) {
  const orders = await db.orders.findMany();
  res.json(orders);
}""",
        """items.forEach((item) => {
  if (item.done) {
    count++;
  }
});""",
        """class Queue {
  constructor() {
    this.items = [];
  }
}""",
        """module.exports = {
  mode: 'production',
  entry: './src/index.js',
};""",
        """let retries = 0;
while (retries < 3) {
  retries += 1;
}""",
    ],
    "typescript": [
        """interface Order {
  id: number;
  title: string;
  claimedBy?: string;
}""",
        """export type Level = 'worker' | 'member' | 'orchestrator';

export function canPost(level: Level): boolean {
  return level !== 'worker';
}""",
        """import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

const result = await client.callTool({ name: 'ferry_join', arguments: {} });""",
        """export class Guard {
  private readonly patterns: RegExp[] = [];

  check(text: string): boolean {
    return this.patterns.some((p) => p.test(text));
  }
}""",
        """const enum Kind {
  Post,
  Summary,
}
const k: Kind = Kind.Post;""",
        """function assertNever(x: never): never {
  throw new Error('unexpected: ' + x);
}""",
    ],
    "go": [
        """package main

import "fmt"

func main() {
	fmt.Println("hello")
}""",
        """func (b *Board) Claim(id int, agent string) error {
	if _, ok := b.claimed[id]; ok {
		return ErrClaimed
	}
	b.claimed[id] = agent
	return nil
}""",
        """type Order struct {
	ID    int
	Title string
}""",
        """import (
	"os"
	"strings"
)""",
        """data, err := os.ReadFile(path)
if err != nil {
	return err
}""",
        """for i := 0; i < n; i++ {
	total += i
}""",
        """defer f.Close()
scanner := bufio.NewScanner(f)
for scanner.Scan() {
	lines = append(lines, scanner.Text())
}""",
    ],
    "c": [
        """#include <stdio.h>

int main(void) {
    printf("hello\\n");
    return 0;
}""",
        """static int count_lines(const char *text) {
    int n = 0;
    for (; *text; text++) {
        if (*text == '\\n') n++;
    }
    return n;
}""",
        """for (int i = 0; i < n; i++)
    sum += a[i];""",
        """while (n > 0)
    n = next(n);""",
        """#ifndef FERRY_H
#define FERRY_H
int ferry_check(const char *text);
#endif""",
        """char buf[256];
size_t len = strlen(src);
memcpy(buf, src, len);
buf[len] = 0;""",
        """struct order {
    int id;
    char title[64];
};""",
        """if (fd < 0) {
    perror("open");
    exit(1);
}""",
    ],
    "cpp": [
        """#include <iostream>
#include <vector>

int main() {
    std::vector<int> v{1, 2, 3};
    std::cout << v.size() << std::endl;
}""",
        """namespace ferry {
class Guard {
public:
    bool check(const std::string& text) const;
};
}""",
        """template <typename T>
T max_of(const std::vector<T>& xs) {
    return *std::max_element(xs.begin(), xs.end());
}""",
        """auto it = map.find(key);
if (it != map.end()) {
    return it->second;
}""",
        """std::string Guard::redact(const std::string& text) const {
    return std::regex_replace(text, pattern_, "[redacted]");
}""",
    ],
    "java": [
        """public class Main {
    public static void main(String[] args) {
        System.out.println("hello");
    }
}""",
        """package org.ferry.guard;

import java.util.List;
import java.util.regex.Pattern;""",
        """@Override
public String toString() {
    return "Order(" + id + ")";
}""",
        """private final Map<Integer, String> claimed = new HashMap<>();

public boolean claim(int id, String agent) {
    return claimed.putIfAbsent(id, agent) == null;
}""",
        """for (String line : lines) {
    if (line.isBlank()) {
        continue;
    }
    out.add(line.trim());
}""",
        """try {
    Files.writeString(path, text);
} catch (IOException e) {
    throw new UncheckedIOException(e);
}""",
    ],
    "shell": [
        """#!/usr/bin/env bash
set -euo pipefail
cargo build --release
cp target/release/ferry /usr/local/bin/""",
        """for f in *.log; do
  gzip "$f"
done""",
        """if [ -z "$FERRY_HOME" ]; then
  echo "FERRY_HOME is not set" >&2
  exit 1
fi""",
        """case "$1" in
  start) run_server ;;
  stop) kill "$(cat pid)" ;;
esac""",
        """deploy() {
  rsync -av dist/ host:/srv/app/
  ssh host 'systemctl restart app'
}""",
        """export PATH="$HOME/.cargo/bin:$PATH"
cd "$(dirname "$0")/.."
grep -rn 'TODO' src | wc -l""",
        """while read -r line; do
  echo "got: $line"
done < input.txt""",
    ],
    "sql": [
        """SELECT id, title, claimed_by
FROM orders
WHERE state = 'open'
ORDER BY id;""",
        """CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    claimed_by TEXT
);""",
        """SELECT *
FROM orders;""",
        """INSERT INTO orders (id, title)
VALUES (1, 'write the guard');""",
        """UPDATE orders SET state = 'done'
WHERE id = 42;""",
        """select o.id, count(*)
from orders o
join entries e on e.order_id = o.id
group by o.id;""",
        """WITH recent AS (
    SELECT * FROM entries WHERE at > now() - interval '1 day'
)
SELECT author, count(*) FROM recent GROUP BY author;""",
        """ALTER TABLE orders ADD COLUMN heavy BOOLEAN DEFAULT false;
CREATE INDEX orders_state ON orders (state);""",
    ],
    "php": [
        """<?php
echo "hi";
$x = 1;""",
        """<?php
function claim(int $id, string $agent): bool {
    return $this->board->claim($id, $agent);
}""",
        """$orders = [];
foreach ($rows as $row) {
    $orders[] = $row['id'];
}""",
    ],
    "diff": [
        """diff --git a/ferry-mcp-core/src/lib.rs b/ferry-mcp-core/src/lib.rs
index 3f2a9c1..4e5f6a7 100644
--- a/ferry-mcp-core/src/lib.rs
+++ b/ferry-mcp-core/src/lib.rs
@@ -14,6 +14,7 @@
 pub mod channel;
+pub mod guard;
 pub mod protocol;""",
        """--- a/README.md
+++ b/README.md
@@ -1,3 +1,4 @@
 # ferry-mcp
+An MCP server for fleets.""",
        """@@ -10,7 +10,7 @@ fn parse(text: &str) {
-    let x = 1;
+    let x = 2;
     x""",
        """diff --git a/docs/ARCHITECTURE.md b/docs/ARCHITECTURE.md
new file mode 100644
index 0000000..e69de29""",
        """Here is my change:
diff --git a/Cargo.toml b/Cargo.toml
index 1111111..2222222 100644
--- a/Cargo.toml
+++ b/Cargo.toml
@@ -20,3 +20,4 @@ thiserror = "2"
+regex = "1"
Please apply it.""",
        """@@ -1 +1 @@
-old line
+new line""",
    ],
    "fenced": [
        """```rust
let x = 1;
```""",
        """Try this:

```
cargo test -p ferry-mcp-core
```""",
        """```json
{"order": 42}
```""",
        """~~~python
print("hi")
~~~""",
        """The fix:
```
add the regex set, then run it
```
done""",
        """```sh
ferry channel status""",
    ],
}

# Prose an agent wraps a paste in; each unfenced sample also appears wrapped.
WRAPS = [
    "Here is the fix:\n\n{c}\n\nThat should do it.",
    "Done. The new version:\n{c}",
    "{c}\n\nLet me know if this is ok.",
]


def code():
    rows = []
    for lang, samples in CODE.items():
        for s in samples:
            rows.append((lang, s))
        if lang in ("diff", "fenced"):
            continue
        for i, s in enumerate(samples):
            rows.append((lang, WRAPS[i % len(WRAPS)].format(c=s)))
    return rows


# --- ordinary ---------------------------------------------------------------------------


def sha1():
    return pick(HEX, 40)


def ordinary():
    rows = []

    def add(kind, texts):
        rows.extend((kind, t) for t in texts)

    add(
        "commit",
        [
            t.format(s=sha1(), short=pick(HEX, 7), mid=pick(HEX, 12))
            for t in [
                "merged in {short}",
                "fixed by {s}",
                "cherry-pick {short} onto release",
                "bisect points at {mid}",
                "rebased on {s}, tests green",
                "commit {s} is the one to review",
                "reverted {short} because it broke the reader",
                "see {short}..{short} for the range",
                "HEAD is at {s}",
                "the secret rotation landed in {short}",
            ]
            for _ in range(4)
        ],
    )
    add(
        "sha256",
        [
            t.format(h=pick(HEX, 64))
            for t in [
                "pin sha256:{h}",
                "the download must match {h}",
                "expected sha256 = {h}",
                "sha256sum: {h}  ferry-x86_64-linux.tar.gz",
                "digest sha256:{h} for the image",
            ]
            for _ in range(5)
        ],
    )
    add(
        "uuid",
        [
            t.format(u="-".join(pick(HEX, n) for n in (8, 4, 4, 4, 12)))
            for t in [
                "request id {u}",
                "order {u} is blocked",
                "trace {u} shows the timeout",
                "the session id was {u}",
                "idempotency key {u}",
            ]
            for _ in range(5)
        ],
    )
    add(
        "path",
        [
            "see ferry-mcp-core/src/guard/secrets.rs",
            "the key lives in ~/.local/state/ferry/keys/demo/alice.json",
            "logs are under /var/log/ferry/2026-08-15/",
            "moved tests/it/guard.rs next to tests/it/shape.rs",
            "C:\\Users\\ana\\AppData\\Roaming\\ferry\\config.toml is the Windows path",
            "edit .github/workflows/ci.yml to add the bench step",
            "the secrets folder is /run/secrets/ (mounted read-only)",
            "look at src/channel/machine/home/seal.rs for the sealed key format",
            "ferry-mcp-core/tests/guard_corpus/ordinary.txt has the hard cases",
            "/home/ana/projects/ferry/target/debug/ferry",
            "token.rs and secret.rs were renamed to tokens.rs and secrets.rs",
            "the private_key.pem in tests/fixtures is a fake on purpose",
        ],
    )
    add(
        "url",
        [
            "PR: https://github.com/ferry/ferry-mcp/pull/42",
            "docs at https://docs.rs/regex/latest/regex/struct.RegexSet.html",
            "clone https://ana@git.example.com/ferry/ferry-mcp.git",
            "the remote is ssh://git@git.example.com:22/ferry/ferry-mcp.git",
            "git@github.com:ferry/ferry-mcp.git is the upstream",
            "https://example.com/search?q=api+key&page=2",
            "see https://github.blog/2021-04-05-behind-githubs-new-authentication-token-formats/",
            "the webhook docs: https://api.slack.com/messaging/webhooks",
            "http://localhost:3000/orders/42",
            "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX is the doc example",
            "postgres://localhost:5432/ferry (no password, peer auth)",
            "redis://cache:6379/0",
            "mongodb://db.internal:27017/orders",
            "https://user@host.example.com/path has a user but no password",
            "ferry://demo/order/42",
            "https://ci.example.com/job/ferry/1337/console",
        ],
    )
    add(
        "cursor",
        [
            "next: eyJvZmZzZXQiOjQwfQ",
            "cursor=Y3Vyc29yOjQy",
            "resume with c1.alice~0123456789abcdef~12.bob~fedcba9876543210~3",
            "next cursor c2a",
            "pass nextPageToken=CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA0 to get the rest",
            "the page token is CAUQAA",
            "cursor: eyJsYXN0IjoiYm9iIiwic2VxIjoxMn0=",
            "catch up from c1.fang~00ff00ff00ff00ff~120",
            "continuation_token: AAAAAQAAAAAAAAAD",
            "offset token MTIzNDU2 (base64 of 123456)",
        ],
    )
    add(
        "public_key",
        [
            t.format(k=pick(HEX, 64))
            for t in [
                "alice's key is {k}",
                "public key: {k}",
                "pinned roster key {k}",
                "the master key changed to {k}",
                '"public": "{k}"',
            ]
            for _ in range(4)
        ]
        + ["signature " + pick(HEX, 128) for _ in range(3)]
        + ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + pick(ALNUM + "+/", 43) + " ana@laptop" for _ in range(3)],
    )
    add(
        "placeholder",
        [
            "GH_TOKEN: ${{ secrets.PAT_WORKFLOW }}",
            "NPM_TOKEN=${{ secrets.NPM_TOKEN }}",
            "set OPENAI_API_KEY=<YOUR_API_KEY>",
            "api_key: <YOUR_API_KEY>",
            "the key looks like sk-... and starts with sk-proj-",
            "sk-proj-...",
            "export OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "API_KEY=changeme",
            "PASSWORD=changeme",
            "SECRET=xxxx",
            "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789 is not a real one",
            "github_pat_xxxxxxxxxxxxxxxxxxxxxx_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "PASSWORD=<password>",
            "AKIAIOSFODNN7EXAMPLE is the AWS docs example id",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "postgres://user:${DB_PASSWORD}@db/app",
            "mysql://root:<password>@localhost/shop",
            "redis://:****@cache:6379",
            "TOKEN=your-token-here",
            "xoxb-your-token",
            "SLACK_BOT_TOKEN=xoxb-xxxxxxxxxxxx-xxxxxxxxxxxxx-xxxxxxxxxxxxxxxxxxxxxxxx",
            "Authorization: Bearer $TOKEN",
            'curl -H "Authorization: Bearer ${GITHUB_TOKEN}" https://api.github.com/user',
            "SECRET_KEY=your_secret_key_here",
            "api_key = os.environ['API_KEY']",
            "token: process.env.FERRY_TOKEN",
            "DB_PASSWORD=$(cat /run/secrets/db_password)",
            "sk_live_...",
            "hf_...",
            "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----",
            "a PEM key starts with -----BEGIN PRIVATE KEY----- and then base64 lines",
            "client_secret: REPLACE_ME",
            "password: ********",
            "AIzaSyXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
            "STRIPE_SECRET_KEY=sk_test_xxxxxxxxxxxxxxxxxxxxxxxx",
            "eyJhbGciOiJIUzI1NiJ9 is just a base64 header",
            "jwt: <paste the token from the login response>",
            "password=%s",
        ],
    )
    add(
        "prose",
        [
            "rotate the GitHub token before Friday",
            "the API key is in the vault",
            "never paste a private key into a message",
            "I replaced the AWS secret access key in CI",
            "the JWT expires after an hour, so refresh it",
            "password rotation is done for all three services",
            "Secret scanning flagged nothing on main",
            "the token endpoint returns 401 when the clock is off",
            "we should use ferry channel secret for the deploy key",
            "who has the Stripe live key? I need a restricted one",
            "the OpenAI key was revoked, ask Ana for a new one",
            "Slack webhook moved to the ops channel",
            "the npm token needs publish rights on @ferry/cli",
            "the PyPI token is scoped to the ferry project only",
            "Twilio auth tokens are rotated monthly",
            "our Discord bot token lives in 1Password",
            "the database URL now points at the replica",
            "AWS access keys older than 90 days get disabled",
            "the SSH private key for the runner was regenerated",
            "GitLab deploy tokens expire in 30 days",
            "renamed the SECRET env var to FERRY_SECRET",
            "hugging face token for the model mirror is read-only",
            "the bearer token goes in the Authorization header",
            "API keys must never be logged",
            "key rotation runbook: docs/runbooks/rotate.md",
            "the secret is 32 bytes and base64 encoded",
            "tokens: 1200 in, 340 out",
            "I used about 40k tokens on that order",
            "token budget is 630 for the whole tools list",
            "secret sauce: small commits",
            "the password prompt hangs on Windows",
            "sealed keys need the passphrase after a reboot",
            "age keys are fine for the backups",
            "our PGP key expired, releases are unsigned until Monday",
            "JWT, PASETO or macaroons? macaroons look like PyPI tokens",
            "please do not send the .env file",
        ],
    )
    add(
        "assignment",
        [
            "token_ttl: 3600",
            "max_tokens=4096",
            "TOKEN_FILE=/run/secrets/token",
            "SECRET_NAME=prod/db/password",
            "tokenizer: cl100k_base",
            "password_min_length: 12",
            "GITHUB_TOKEN is set in CI",
            "API_KEY_HEADER=X-Api-Key",
            "SECRET_ARN=arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod",
            "token_type: Bearer",
            "secret_rotation: 30d",
            "AUTH_URL=https://auth.example.com/oauth/token",
            "PASSWORD_POLICY=strict",
            "secret: see the vault",
            "api_key: stored in 1password",
            "TOKEN_SHA256=" + pick(HEX, 64),
            "SECRET_KEY_FILE=/etc/ferry/secret.key",
            "password_hash: argon2id",
            "credentials: ~/.aws/credentials",
            "TOKEN_LIMIT=1000000",
            "ACCESS_KEY_ID=AKIA (the rest is in the vault)",
            "secret_id=" + "-".join(pick(HEX, n) for n in (8, 4, 4, 4, 12)),
            "token: " + "-".join(pick(HEX, n) for n in (8, 4, 4, 4, 12)),
            "PRIVATE_KEY_PATH=./keys/dev.pem",
            "password: correct-horse-battery-staple (the example from xkcd)",
            "SECRET=refs/heads/main",
            "token=" + pick(HEX, 40),
        ],
    )
    add(
        "digest",
        [
            "X-Request-Id: " + pick(HEX, 32),
            "traceparent: 00-" + pick(HEX, 32) + "-" + pick(HEX, 16) + "-01",
            'etag "' + sha1() + '"',
            'integrity="sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC"',
            "docker pull ghcr.io/ferry/ferry@sha256:" + pick(HEX, 64),
            "nix store path /nix/store/0c0a2h2qgmxw4v6xvjn3q6y9r8m1z5k7-ferry-0.1.0",
            "go.sum: github.com/stretchr/testify v1.8.4 h1:CcVxjf3Q8PM0mHUKJCdn+eZZtm5yQwehR5yeSVQQcUk=",
            'Cargo.lock checksum = "' + pick(HEX, 64) + '"',
            "npm integrity sha512-" + base64.b64encode(R.randbytes(64)).decode(),
            "base64 of the nonce: " + base64.b64encode(R.randbytes(16)).decode(),
            "gpg: Signature made Fri 15 Aug 2026, key ID 4AEE18F83AFDEB23",
            "fingerprint 3AA5 C343 7123 37C5 4D4E  1E9A 4AEE 18F8 3AFD EB23",
            "The build took 12m34s; artifact sha1 " + sha1(),
            "Content-Security-Policy: default-src 'self'; script-src 'nonce-rAnd0m123'",
            "the MCP session id Mcp-Session-Id: " + "-".join(pick(HEX, n) for n in (8, 4, 4, 4, 12)),
        ],
    )
    add(
        "public_material",
        [
            "-----BEGIN CERTIFICATE-----\n" + pem_lines(R.randbytes(96)) + "\n-----END CERTIFICATE-----",
            "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA" + base64.b64encode(R.randbytes(32)).decode() + "\n-----END PUBLIC KEY-----",
            "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQC" + pick(ALNUM + "+/", 60) + " ana@box",
            "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p is my age recipient",
            "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
            "0x742d35Cc6634C0532925a3b844Bc454e4438f44e",
            "PGP key 0x4AEE18F83AFDEB23 signs the releases",
            "Signed-off-by: Ana Lima <ana@example.com>",
            "Co-authored-by: bob <bob@users.noreply.github.com>",
        ],
    )
    add(
        "key_names",
        [
            "AKIA is the prefix of long-term AWS key ids, ASIA of temporary ones",
            "the Slack token starts with xoxb- for bots and xoxp- for users",
            "sk-ant- keys belong to the Anthropic console",
            "ya29 tokens are short-lived Google OAuth tokens",
            "github_pat_ tokens are fine-grained",
            "the regex is gh[pousr]_[A-Za-z0-9]{36}",
            "pattern: AKIA[0-9A-Z]{16}",
            "jwt.io shows the header alg HS256",
            "eyJhbGciOiJIUzI1NiJ9.e30 (an empty payload example)",
            "https://example.com/reset?token=abc",
            "https://example.com/callback?code=4%2F0AY0e-g7xQ&state=xyz",
            "https://s3.amazonaws.com/bucket/key?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA",
            "password123 is a terrible password",
            'the password is "hunter2"',
            "We use mTLS; no passwords anywhere",
            "Secret: none needed, the job uses OIDC",
            "password reset mail goes out at 09:00",
            "export RUST_LOG=ferry=debug,regex=warn",
            'RUSTFLAGS="-C target-cpu=native" cargo bench',
            'the commit message says "token: redact before write"',
            "session_token_max_age=86400",
            "The auth token was 401'ing because of clock skew, fixed in " + pick(HEX, 7),
            "SECRET_SCANNING_ENABLED=true",
            "api_key_rotation_days: 90",
            "token 5 of 12 processed",
            "use Bearer auth with the token from ferry login",
            "Authorization header missing on /orders",
            "bypass=true for the dry run",
        ],
    )
    add(
        "multiline",
        [
            "Summary of today:\n- fixed the reader cursor (c1.alice~0123456789abcdef~12)\n- added SECRET redaction\n- bench: 1.2 µs/KB",
            "Agent fang: standing by.\nPrimary: alice since 10:02.\nQueue: 3 orders open.",
            "1. git fetch origin\n2. git rebase origin/main\n3. cargo test",
            "Commands I ran:\ncargo build --release\ncargo test --workspace --no-fail-fast\ncargo clippy --all-targets -- -D warnings",
            "Recap:\nIf the primary is quiet for 10 minutes, a standby takes over.\nOtherwise nothing happens.",
            "for each order in the queue: claim, work, submit\nthen report back",
            "Results:\n  tests: 212 passed\n  clippy: clean\n  fmt: clean",
            "The API:\n  check(text, use) -> Result\n  redact(text) -> Redacted\n  find_secrets(text) -> Vec",
            "Let me know what you think; I'm around until 18:00.\nThanks!",
            "Error: permission denied (publickey).\nfatal: Could not read from remote repository.",
            "warning: unused variable: `x`\n  --> src/main.rs:2:9\n   |\n2  |     let x = 5;\n   |         ^ help: if this is intentional, prefix it with an underscore: `_x`",
            "Review comments:\nreturn early on error;\nthe rest reads well",
            "Reproduce with:\ncargo test -p ferry-mcp-core guard",
            "Fix:\nlet x = foo()?;",
            "Config changes:\nretries = 3\ntimeout = 30s\nbackoff = exponential",
            "Steps:\nfor each order: claim it\nif it fails: retry",
            "Status: done.\nTests: 218 passed, 1 skipped.\nClippy: clean.\nBench: 2.5 µs per KB.",
            "Plan:\nfirst, read the docs;\nthen, write the module;\nfinally, measure.",
            "The error was:\nthread 'main' panicked at 'index out of bounds', src/guard/code.rs:120:9\nnote: run with `RUST_BACKTRACE=1`",
            "Agent alice -> bob: can you review order 42?\nbob -> alice: yes, after lunch.",
            "ok\nthanks",
            '{\n  "order": 42,\n  "state": "done"\n}',
            "order: 42\nstate: done\nref: refs/heads/guard",
            "Next steps:\n  - wire guard::check into ferry_talk\n  - redact on read in ferry_catchup",
            "I renamed it:\nfn parse(text: &str) -> Result<Order, ParseError>",
            "Try:\nnpm install\nnpm run build && npm test\nnode dist/index.js --port 3000",
            "Decision log:\nuse regex; it is already in the graph\nno aho-corasick; regex has it inside",
        ],
    )
    add(
        "gitref",
        [
            "refs/heads/main",
            "origin/feature-x",
            "pushed to refs/heads/guard",
            "rebase onto origin/main please",
            "tag v1.4.2 is out",
            "release-2026-08 branch is frozen",
            "refs/tags/v0.9.0-rc.1",
            "work is on guard at " + pick(HEX, 7),
            "hand in: refs/heads/orders/42-guard",
            "HEAD~3",
        ],
    )
    add(
        "order",
        [t.format(n=R.randint(1, 9999)) for t in ["order {n}", "claimed #{n}", "ord-{n}", "order {n} is done", "review order {n} please"] for _ in range(4)],
    )
    add(
        "number",
        [
            "1200 tests",
            "p99 = 12.5 ms",
            "3,000,000 entries",
            "version 0.1.0",
            "exit code 101",
            "0x7fff5fbff8a8",
            "2026-08-15T10:00:00Z",
            "12:30:45",
            "+49 30 1234567",
            "4111 1111 1111 1111 is the test card",
            "port 5432",
            "ratio 1.07",
            "65535",
            "3.14159265358979323846",
            "18446744073709551615",
        ],
    )
    add(
        "mention",
        [
            "renamed fn foo to bar",
            "the def parse() helper is gone",
            "moved the import of regex into core",
            "SELECT count is off by one in the report",
            "use std::fmt; is unused now",
            "fn check(text: &str, used_as: TextUse) -> Result<(), GuardRefusal> is the entry point",
            "class Board could be a struct",
            "#include guards are not needed in Rust",
            "function names in camelCase, please",
            "the diff is in " + pick(HEX, 7),
            "hunk @@ -1,3 +1,4 @@ looked odd",
            "the --- a/ and +++ b/ prefixes are stripped",
            "diff --git output is not accepted in posts",
            "run `cargo test -p ferry-mcp-core` before you submit",
            "let x = 5; is the example in the docs",
            "wrap code in ``` fences in the PR, not here",
            "I called items.push(item) in a loop, now it is extend",
            "const enums are not worth it",
            "if err != nil { return err } is fine here",
        ],
    )
    add(
        "multiline",
        [
            "Done:\n- renamed fn parse to parse_text\n- dropped the unused import\n- SELECT count now matches\nNext: review",
            "Summary\n\nThe guard now refuses diffs. Tests: 120 passed. Commit " + pick(HEX, 7) + " on branch guard.",
            "Plan:\n1. add the regex set\n2. write the corpus\n3. measure the cost per KB",
            "Blocked: cargo test fails on main since " + pick(HEX, 7) + ".\nerror[E0425]: cannot find value `x` in this scope\nWaiting on Ana.",
            "| kind | recall |\n|---|---|\n| github_token | 100% |\n| jwt | 100% |",
            "Q: should posts allow one-line commands?\nA: yes, `cargo test -p ferry-mcp-core` is fine.",
            "if the build is green, merge it\nif not, ping me",
            "Checked:\ncargo fmt --all --check: clean\ncargo clippy: clean",
            "Rotated:\n- the GitHub token\n- the npm token\n- the AWS access key\nAll in the vault.",
            "Status for order 42\n\nclaimed by alice at 10:02\nprogress: corpus written\nnext: bench",
            "Hi Bob,\n\nthe key file format is ferry-key/1, with public and secret fields.\nDon't paste one here.\n\nAna",
            "Review notes:\n* naming is fine\n* the regex set is compiled once\n* one test name reads badly",
            "Results\nref: refs/heads/guard\ncommit: " + sha1() + "\nnote: all green",
            "Changed files:\nferry-mcp-core/src/guard/mod.rs\nferry-mcp-core/src/lib.rs\ndocs/ARCHITECTURE.md",
            "thread 'main' panicked at src/main.rs:3:5:\ncalled `Option::unwrap()` on a `None` value",
            "Timeline:\n10:00 started\n10:40 corpus done\n11:15 bench done",
            "The fix is small. I moved the check before the write,\nso nothing is appended when the guard refuses.\nTests cover both paths.",
            "Questions:\n- keep the 200-byte window for AWS secrets?\n- report kinds in snake_case?",
            "hints: cores=2, ram_gb=4\nexpected_minutes: 30",
            "Progress: 3/5 steps\nBlocked on: review of " + pick(HEX, 7),
            "Notes from the call\n\nWe keep posts short. Work goes to the repo.\nThe human approves releases.",
            "TODO\n- [x] guard\n- [ ] wire it into ferry_talk\n- [ ] docs",
            "Steps to reproduce:\n1. ferry init --demo\n2. ferry mcp serve --as alice --project demo\n3. call ferry_talk with an empty body",
            "I think we should:\n  keep the set of kinds small\n  add more only with corpus samples\nThoughts?",
            "Review: approved.\nNice tests; the names read as sentences.\nMerge when CI is green.",
        ],
    )
    return rows


# --- the formats, disguises, code shapes and hard negatives added with issue 18 ----------
# A second seeded generator, so the rows above stay as they were.
R2 = random.Random(20261201)


def pick2(alphabet, n):
    return "".join(R2.choice(alphabet) for _ in range(n))


def uuid2():
    h = pick2(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def crc_token2(prefix, random_len=30):
    body = pick2(ALNUM, random_len)
    return prefix + body + b62(binascii.crc32(body.encode()), 6)


NAMED = ["{s}", "here is the key: {s}", "use {s} for the deploy", "the value is `{s}` (from the vault)", '{{"key": "{s}"}}', "{s} <- rotated yesterday", "config:\n  key: {s}\n  region: eu-west-1", "Found it in the old .env, {s}, still valid I think"]


def more_secrets():
    rows = []

    def add(kind, make, contexts=NAMED, n=10):
        for i in range(n):
            rows.append((kind, contexts[i % len(contexts)].format(s=make())))

    add("azure_ad_client_secret", lambda: pick2(ALNUM, 3) + R2.choice(DIGITS) + "Q~" + pick2(ALNUM + "_~.-", 34),
        ["{s}", "AZURE_CLIENT_SECRET={s}", "client secret: {s}", '"clientSecret": "{s}"'])
    add("onepassword_secret", lambda: "A3-" + pick2(UPPER + DIGITS, 6) + "-" + pick2(UPPER + DIGITS, 11) + "-" + "-".join(pick2(UPPER + DIGITS, 5) for _ in range(3)))
    add("adobe_client_secret", lambda: "p8e-" + pick2(ALNUM, 32))
    add("alibaba_access_key_id", lambda: "LTAI" + pick2(ALNUM, 20))
    add("artifactory_token", lambda: "AKCp" + pick2(ALNUM, 69))
    add("atlassian_api_token", lambda: "ATATT3" + pick2(URLSAFE, 186))
    add("authress_key", lambda: "sc_" + pick2(ALNUM, 10) + "." + pick2(ALNUM, 5) + ".acc_" + pick2(LOWER + DIGITS, 16) + "." + pick2(ALNUM + "+/", 60))
    add("clickhouse_secret", lambda: "4b1d" + pick2(ALNUM, 38))
    add("clojars_token", lambda: "CLOJARS_" + pick2(LOWER + DIGITS, 60))
    add("cloudflare_origin_ca_key", lambda: "v1.0-" + pick2(HEX, 24) + "-" + pick2(HEX, 146))
    add("databricks_token", lambda: "dapi" + pick2(HEX, 32))
    add("defined_networking_key", lambda: "dnkey-" + pick2(LOWER + DIGITS, 26) + "-" + pick2(LOWER + DIGITS, 52))
    add("doppler_token", lambda: "dp.pt." + pick2(ALNUM, 43))
    add("dropbox_token", lambda: "sl." + pick2(URLSAFE, 135))
    add("duffel_token", lambda: "duffel_live_" + pick2(URLSAFE, 43))
    add("dynatrace_token", lambda: "dt0c01." + pick2(UPPER + DIGITS, 24) + "." + pick2(UPPER + DIGITS, 64))
    add("easypost_key", lambda: R2.choice(["EZAK", "EZTK"]) + pick2(ALNUM, 54))
    add("facebook_access_token", lambda: R2.choice(["EAAC", "EAAM"]) + pick2(ALNUM, 120))
    add("flutterwave_key", lambda: "FLWSECK_TEST-" + pick2("abcdefgh" + DIGITS, 32) + "-X")
    add("flyio_token", lambda: "fo1_" + pick2(URLSAFE, 43))
    add("frameio_token", lambda: "fio-u-" + pick2(URLSAFE, 64))
    add("grafana_token", lambda: R2.choice(["glsa_" + pick2(ALNUM, 32) + "_" + pick2(HEX, 8), "glc_" + pick2(ALNUM + "+/", 60), "eyJrIjoi" + pick2(ALNUM, 80)]))
    add("harness_token", lambda: "pat." + pick2(URLSAFE, 22) + "." + pick2(ALNUM, 24) + "." + pick2(ALNUM, 20))
    add("terraform_token", lambda: pick2(LOWER + DIGITS, 14) + ".atlasv1." + pick2(LOWER + DIGITS + "_-", 64))
    add("vault_token", lambda: "hvs." + pick2(URLSAFE, 95), NAMED[:6] + ["VAULT_TOKEN={s}"])
    add("vault_token", lambda: "s." + pick2(ALNUM, 24), ["VAULT_TOKEN={s}", "export VAULT_TOKEN='{s}'"], n=2)
    add("heroku_api_key", lambda: "HRKU-AA" + pick2(URLSAFE, 58), n=6)
    add("heroku_api_key", uuid2, ["HEROKU_API_KEY={s}", '"heroku_api_key": "{s}"', "heroku_token: {s}"], n=6)
    add("infracost_key", lambda: "ico-" + pick2(ALNUM, 32))
    add("intra42_secret", lambda: "s-s4t2ud-" + pick2(HEX, 64))
    add("linear_api_key", lambda: "lin_api_" + pick2(ALNUM, 40))
    add("mailgun_key", lambda: R2.choice(["key-", "pubkey-"]) + pick2(HEX, 32), n=6)
    add("mailgun_key", lambda: pick2("abcdefgh" + DIGITS, 32) + "-" + pick2("abcdefgh" + DIGITS, 8) + "-" + pick2("abcdefgh" + DIGITS, 8),
        ["MAILGUN_SIGNING_KEY={s}", "mailgun_webhook_key: {s}"], n=6)
    add("mailchimp_api_key", lambda: pick2(HEX, 32) + "-us" + str(R2.randint(1, 21)))
    add("teams_webhook", lambda: "https://" + pick2(LOWER, 8) + ".webhook.office.com/webhookb2/" + uuid2() + "@" + uuid2() + "/IncomingWebhook/" + pick2(LOWER + DIGITS, 32) + "/" + uuid2(),
        ["{s}", "post to {s} when it is done", "webhook: {s}"])
    add("new_relic_key", lambda: "NRAK-" + pick2(UPPER + DIGITS, 27))
    add("notion_token", lambda: "ntn_" + pick2(DIGITS, 11) + pick2(ALNUM, 35))
    add("nuget_key", lambda: "oy2" + pick2(LOWER + DIGITS, 43))
    add("octopus_deploy_key", lambda: "API-" + pick2(UPPER + DIGITS, 26))
    add("openshift_token", lambda: "sha256~" + pick2(URLSAFE, 43))
    add("perplexity_key", lambda: "pplx-" + pick2(ALNUM, 48))
    add("plaid_token", lambda: "access-production-" + uuid2())
    add("planetscale_token", lambda: R2.choice(["pscale_tkn_", "pscale_pw_"]) + pick2(URLSAFE, 43))
    add("postman_key", lambda: "PMAK-" + pick2(HEX, 24) + "-" + pick2(HEX, 34))
    add("prefect_key", lambda: "pnu_" + pick2(ALNUM, 36))
    add("pulumi_token", lambda: "pul-" + pick2(HEX, 40))
    add("readme_key", lambda: "rdme_" + pick2(LOWER + DIGITS, 70))
    add("rubygems_key", lambda: "rubygems_" + pick2(HEX, 48))
    add("scalingo_token", lambda: "tk-us-" + pick2(URLSAFE, 48))
    add("sendinblue_key", lambda: "xkeysib-" + pick2(HEX, 64) + "-" + pick2(ALNUM, 16))
    add("sentry_token", lambda: "sntryu_" + pick2(HEX, 64))
    add("settlemint_token", lambda: "sm_pat_" + pick2(ALNUM, 16))
    add("shippo_token", lambda: "shippo_live_" + pick2(HEX, 40))
    add("sidekiq_secret", lambda: pick2(HEX, 8) + ":" + pick2(HEX, 8), ["BUNDLE_GEMS__CONTRIBSYS__COM={s}", "export BUNDLE_ENTERPRISE__CONTRIBSYS__COM={s}"])
    add("sourcegraph_token", lambda: "sgp_" + pick2(HEX, 16) + "_" + pick2(HEX, 40))
    add("square_token", lambda: R2.choice(["sq0csp-" + pick2(URLSAFE, 43), "EAAA" + pick2(URLSAFE, 60), "sq0atp-" + pick2(URLSAFE, 22)]))
    add("typeform_token", lambda: "tfp_" + pick2(URLSAFE, 59))
    add("yandex_key", lambda: R2.choice(["AQVN" + pick2(URLSAFE, 36), "YC" + pick2(URLSAFE, 38)]))
    add("datadog_key", lambda: pick2(HEX, R2.choice([32, 40])), ["DATADOG_API_KEY={s}", "DD_APP_KEY: {s}", '"datadog_api_key": "{s}"', "export DD_API_KEY='{s}'"])
    services = [
        ("ALGOLIA_API_KEY", lambda: pick2(LOWER + DIGITS, 32)),
        ("CLOUDFLARE_API_TOKEN", lambda: pick2(URLSAFE, 40)),
        ("SNYK_TOKEN", uuid2),
        ("OKTA_API_TOKEN", lambda: "00" + pick2(URLSAFE, 40)),
        ("mapbox_access_token", lambda: "sk." + pick2(LOWER + DIGITS, 60) + "." + pick2(URLSAFE, 22)),
        ("HUBSPOT_API_KEY", uuid2),
        ("lob_api_key", lambda: "live_" + pick2(HEX, 35)),
        ("SENTRY_AUTH_TOKEN", lambda: pick2(HEX, 64)),
        ("TWITCH_CLIENT_SECRET", lambda: pick2(LOWER + DIGITS, 30)),
        ("zendesk_token", lambda: pick2(ALNUM, 40)),
        ("CODECOV_TOKEN", uuid2),
        ("gocardless_token", lambda: "live_" + pick2(URLSAFE, 40)),
    ]
    for i, (key, make) in enumerate(services):
        form = ["{k}={v}", '{k}: "{v}"', '"{k}": "{v}"', "export {k}='{v}'"][i % 4]
        rows.append(("service_key", form.format(k=key, v=make())))
    words = ["correcthorsebattery", "Tr0ub4dor&3", "summer2024x", "letmeinpleasenow", "bluehorse42x", "paddington1", "hunter2hunter2", "sommerwind25"]
    forms = ["password: {s}", 'DB_PASSWORD="{s}"', "PGPASSWORD={s}", '"password": "{s}"', "smtp_password = '{s}'", "MYSQL_ROOT_PASSWORD={s}"]
    for i in range(12):
        w = words[i % len(words)]
        if " " in w and "=" in forms[i % len(forms)] and '"' not in forms[i % len(forms)]:
            w = w.replace(" ", "")
        rows.append(("password_assignment", forms[i % len(forms)].format(s=w)))
    for i in range(10):
        pw = R2.choice(["bluehorse42", "ferryboat77", "orders2025", "tidewater9"])
        form = [
            "Server=tcp:ferry.database.windows.net,1433;Database=orders;User ID=admin;Password={p};Encrypt=True;",
            "Data Source=db01;Initial Catalog=app;User Id=svc;Password={p};",
            "Host=10.0.3.12;Port=5432;Username=app;Password={p};Database=ferry",
        ][i % 3]
        rows.append(("connection_string", form.format(p=pw)))
    for i in range(10):
        user, pw = R2.choice(["admin", "deploy", "ci"]), pick2(ALNUM, 12)
        if i % 2 == 0:
            cred = base64.b64encode(f"{user}:{pw}".encode()).decode()
            rows.append(("basic_auth", ["Authorization: Basic {c}", 'curl -H "Authorization: Basic {c}" https://api.example.com'][i % 4 // 2].format(c=cred)))
        else:
            rows.append(("basic_auth", f"curl -u {user}:{pw} https://registry.example.com/v2/_catalog"))
    return rows


CONFUSABLE = {"a": "а", "c": "с", "e": "е", "o": "о", "p": "р", "x": "х", "y": "у", "A": "А", "B": "В", "C": "С", "E": "Е", "H": "Н", "K": "К", "M": "М", "O": "О", "P": "Р", "T": "Т", "X": "Х"}


def rot13(t):
    return t.translate(str.maketrans(UPPER + LOWER, UPPER[13:] + UPPER[:13] + LOWER[13:] + LOWER[:13]))


def disguised():
    rows = []
    ways = {
        "base64": lambda t: base64.b64encode(t.encode()).decode(),
        "base64url": lambda t: base64.urlsafe_b64encode(("token=" + t).encode()).decode().rstrip("="),
        "hex": lambda t: t.encode().hex(),
        "percent": lambda t: "".join("%{:02X}".format(b) for b in t.encode()),
        "rot13": rot13,
        "reversed": lambda t: t[::-1],
        "zero_width": lambda t: "\u200b".join(t),
        "confusables": lambda t: "".join(CONFUSABLE.get(c, c) for c in t),
        "fullwidth": lambda t: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in t),
        "spaced": lambda t: " ".join(t),
        "quoted_halves": lambda t: '"{}" + "{}"'.format(t[: len(t) // 2], t[len(t) // 2 :]),
    }
    contexts = ["{s}", "here it is: {s}", "token = {s}", "use {s} for the deploy", "({s})"]
    for name, way in ways.items():
        for i in range(10):
            token = R2.choice([crc_token2(R2.choice(["ghp_", "gho_", "ghs_"])), crc_token2("npm_"), "glpat-" + pick2(URLSAFE, 20), "AKIA" + pick2(UPPER + "234567", 16), "sk_live_" + pick2(ALNUM, 24)])
            rows.append((name, contexts[i % len(contexts)].format(s=way(token))))
    return rows


def more_code():
    rows = []
    one_line = [
        "fn main() { println!(\"hello\"); }",
        "for (let i = 0; i < items.length; i++) { total += items[i].price; }",
        "def add(a, b): return a + b",
        "squares = [x * x for x in range(10)]",
        "const add = (a, b) => a + b;",
        "if err != nil { return err }",
        "SELECT id, name FROM users WHERE active = 1 ORDER BY name;",
        "let total = items.iter().map(|i| i.price).sum::<u64>(); println!(\"{total}\");",
        "for f in *.rs; do sed -i 's/foo/bar/' \"$f\"; done",
        "int main(void) { printf(\"hi\\n\"); return 0; }",
        "class Point: pass",
        "while True: print(read())",
        "public static void main(String[] args) { System.out.println(args[0]); }",
        "UPDATE orders SET state = 'done' WHERE id = 42;",
    ]
    rows += [("one_line", t) for t in one_line]
    diffs = [
        "-    let x = parse(text)?;\n+    let x = parse(text).map_err(Error::Parse)?;\n     Ok(x)",
        " fn check() {\n-    old_call();\n+    new_call(&text);\n }",
        "-import os\n+import os, sys\n+sys.exit(main())",
        "-const LIMIT = 20;\n+const LIMIT = 50;\n-if (n > LIMIT) { return; }\n+if (n >= LIMIT) { return; }",
        "-\treturn nil\n+\tlog.Printf(\"bad input: %v\", err)\n+\treturn fmt.Errorf(\"bad input: %w\", err)",
        "-SELECT * FROM orders;\n+SELECT id, state FROM orders WHERE state = 'open';",
        "+pub fn cut(text: &str, max: usize) -> &str {\n+    &text[..max]\n+}\n-pub fn clip(text: &str) {}",
        "-    self.items.append(item)\n+    self.items.insert(0, item)",
        "-echo \"$VERSION\"\n+printf '%s\\n' \"$VERSION\"",
        "-    return a+b;\n+    return a + b;",
    ]
    rows += [("headerless_diff", t) for t in diffs]
    configs = [
        '{"name": "ferry", "version": "0.3.1", "private": true}',
        '{\n  "compilerOptions": {\n    "target": "es2022",\n    "module": "nodenext",\n    "strict": true\n  }\n}',
        '[{"id": 1, "state": "open"}, {"id": 2, "state": "done"}]',
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ferry\nspec:\n  replicas: 2",
        "services:\n  db:\n    image: postgres:16\n    ports:\n      - 5432:5432",
        "[package]\nname = \"ferry-mcp\"\nversion = \"0.1.0\"\nedition = \"2024\"",
        "[tool.pytest.ini_options]\naddopts = \"-q\"\ntestpaths = [\"tests\"]",
        '{"retries": 3, "timeout_ms": 2500, "backoff": {"base": 100, "max": 2000}}',
        "on:\n  push:\n    branches: [main]\njobs:\n  test:\n    runs-on: ubuntu-latest",
        'the settings I used: {"threads": 2, "batch": 64, "warmup": false}',
    ]
    rows += [("config", t) for t in configs]
    traces = [
        "Traceback (most recent call last):\n  File \"app.py\", line 12, in <module>\n    main()\nValueError: bad input",
        "Exception in thread \"main\" java.lang.NullPointerException\n\tat com.ferry.Orders.claim(Orders.java:42)\n\tat com.ferry.Main.main(Main.java:10)",
        "TypeError: Cannot read properties of undefined (reading 'id')\n    at claim (/app/src/orders.js:42:17)\n    at /app/src/index.js:10:5",
        "thread 'main' panicked at src/main.rs:3:5:\nindex out of bounds\nstack backtrace:\n   0: rust_begin_unwind\n   1: core::panicking::panic_fmt\n             at ./src/main.rs:3:5",
        "panic: runtime error: invalid memory address\n\ngoroutine 1 [running]:\nmain.main()\n\t/app/main.go:12 +0x1d",
        "  File \"/usr/lib/python3.12/json/decoder.py\", line 337, in decode\n  File \"/usr/lib/python3.12/json/decoder.py\", line 355, in raw_decode",
        "Unhandled exception. System.InvalidOperationException: no seat\n   at Ferry.Seats.Take() in /src/Seats.cs:line 20\n   at Ferry.Program.Main() in /src/Program.cs:line 8",
        "Error: connect ECONNREFUSED 127.0.0.1:5432\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)",
        "it fails like this:\nTraceback (most recent call last):\n  File \"run.py\", line 3, in <module>\nKeyError: 'seat'",
        "java.io.IOException: closed\n\tat java.base/java.io.FileOutputStream.write(FileOutputStream.java:349)\n\tat Main.save(Main.java:77)",
    ]
    rows += [("stack_trace", t) for t in traces]
    return rows


def more_ordinary():
    rows = []
    prose = ["the build passed on both machines", "rotate the keys before Friday", "release notes are in the repo", "the order board is green again"]
    for p in prose:
        rows.append(("encoded_prose", "log line: " + base64.b64encode(p.encode()).decode()))
        rows.append(("encoded_prose", "hex of the note: " + p.encode().hex()))
        rows.append(("encoded_prose", "https://example.com/search?q=" + "%20".join(p.split())))
    for _ in range(6):
        rows.append(("hash", "sha256:" + pick2(HEX, 64)))
        rows.append(("hash", "image digest sha256@" + pick2(HEX, 64) + " pinned"))
    rows += [
        ("unicode", "Сборка прошла успешно, заказ закрыт. Ключи не нужны."),
        ("unicode", "ビルドは成功しました。次はレビューです。"),
        ("unicode", "Ｔｈｅ ｔｅｓｔｓ ｐａｓｓ ｎｏｗ（ｆｕｌｌｗｉｄｔｈ）"),
        ("unicode", "Ελέγχθηκε: όλα καλά, το κλειδί δεν χρειάζεται."),
        ("unicode", "naïve café résumé, déjà vu — no secrets here"),
        ("unicode", "zero\u200bwidth in prose is just noise"),
        ("spaced", "S T A T U S : all green"),
        ("spaced", "a b c d e f g"),
        ("spaced", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15"),
        ("reversed", "desrever si siht tub gnihton terces"),
        ("rot13", "Gur ohvyq cnffrq naq gur grfgf ner terra"),
        ("password_talk", "password: required"),
        ("password_talk", "passwordless login works now"),
        ("password_talk", "DB_PASSWORD_FILE=/run/secrets/db_password"),
        ("password_talk", "password: ********"),
        ("password_talk", "set PGPASSWORD=$DB_PASSWORD before psql"),
        ("password_talk", "the password field is optional; password=None by default"),
        ("password_talk", "all 212 tests passed, the password check too"),
        ("password_talk", "password = getpass.getpass()"),
        ("password_talk", "MYSQL_ROOT_PASSWORD: ${MYSQL_ROOT_PASSWORD}"),
        ("password_talk", "password: Option<String>"),
        ("service_talk", "the heroku app id is " + uuid2()),
        ("service_talk", "DATADOG_API_KEY=<your key>"),
        ("service_talk", "HEROKU_API_KEY=${HEROKU_API_KEY}"),
        ("service_talk", "a mailgun private key starts with key- and has 32 hex digits"),
        ("service_talk", "global timeout is 30s; the vault is sealed"),
        ("service_talk", "sentry issue " + pick2(HEX, 32) + " is fixed"),
        ("service_talk", "jira: FERRY-123, FERRY-124 closed"),
        ("service_talk", "Basic auth is off; we use bearer tokens now"),
        ("service_talk", "curl -u alice https://example.com asks for the password"),
        ("service_talk", "Server=db01;Database=orders;Trusted_Connection=True;"),
        ("code_talk", "use std::fmt; is unused now"),
        ("code_talk", "the config has three keys: name, version, private"),
        ("code_talk", "call foo(); then bar"),
        ("code_talk", "Status: done\nNext: review\nBlocked: no"),
        ("code_talk", "Results:\n  tests: 212 passed\n  clippy: clean"),
        ("code_talk", "- removed the old cut\n- added guard::cut\n+ one more test"),
        ("code_talk", "the trace said at line 42 of orders.rs"),
        ("code_talk", "{\"ok\": true}"),
        ("code_talk", "I ran SELECT on the replica, it was fine"),
    ]
    return rows


# --- gitleaks' rules G to Z, Kubernetes Secrets, PKCS#12 blobs, PHP (issue 18, formats) ---
# A third seeded generator, so the rows above stay as they were.
R3 = random.Random(20261202)


def pick3(alphabet, n):
    return "".join(R3.choice(alphabet) for _ in range(n))


def uuid3():
    h = pick3(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def pfx_der(n):
    """The start of a PKCS#12 file: SEQUENCE { INTEGER 3, SEQUENCE { ... } } and random bytes."""
    rest = bytes(R3.randrange(256) for _ in range(n))
    inner = b"\x30\x82" + len(rest).to_bytes(2, "big") + rest
    body = b"\x02\x01\x03" + inner
    return b"\x30\x82" + len(body).to_bytes(2, "big") + body


def wrap(text, width):
    return "\n".join(text[i:i + width] for i in range(0, len(text), width))


def k8s_secret(i):
    values = [base64.b64encode(pick3(ALNUM + "!#%", R3.randint(10, 24)).encode()).decode() for _ in range(2)]
    name = R3.choice(["db-credentials", "api-keys", "registry-auth", "smtp"])
    forms = [
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\ntype: Opaque\ndata:\n  username: {values[0]}\n  password: {values[1]}",
        f"kind: Secret\napiVersion: v1\nmetadata:\n  name: {name}\n  namespace: prod\ndata:\n  token: \"{values[0]}\"",
        f"here is the manifest I applied:\n\napiVersion: v1\ndata:\n  api-key: {values[1]}\nkind: Secret\nmetadata:\n  name: {name}",
        f"---\napiVersion: v1\nkind: \"Secret\"\nmetadata:\n  name: {name}\nstringData:\n  DB_PASSWORD: {pick3(ALNUM, 14)}x9",
    ]
    return forms[i % len(forms)]


def gz_secrets():
    rows = []

    def add(kind, make, contexts=NAMED, n=10):
        for i in range(n):
            rows.append((kind, contexts[i % len(contexts)].format(s=make())))

    add("gitlab_token", lambda: R3.choice([
        "_gitlab_session=" + pick3(LOWER + DIGITS, 32),
        "glcbt-" + pick3(ALNUM, 2) + "_" + pick3(URLSAFE, 20),
        "glft-" + pick3(URLSAFE, 20),
        "glimt-" + pick3(URLSAFE, 25),
        "glagent-" + pick3(URLSAFE, 50),
        "gloas-" + pick3(URLSAFE, 64),
        "glsoat-" + pick3(URLSAFE, 20),
        "glffct-" + pick3(URLSAFE, 20),
        "glptt-" + pick3(HEX, 40),
        "glpat-" + pick3(URLSAFE, 27) + "." + pick3(LOWER + DIGITS, 9),
        "glrt-t1_" + pick3(URLSAFE, 27) + "." + pick3(LOWER + DIGITS, 9),
    ]), ["{s}", "the runner token is {s}", "CI_TOKEN={s}", "{s} (expires in 30 days)"], n=12)
    add("gitlab_token", lambda: "_gitlab_session=" + pick3(LOWER + DIGITS, 32),
        ["Cookie: {s}; path=/", "curl -b '{s}' https://gitlab.example.com/api/v4/user"], n=4)
    add("grafana_token", lambda: R3.choice(["glc_" + pick3(ALNUM + "+/", 80) + "==", "glsa_" + pick3(ALNUM, 32) + "_" + pick3(HEX, 8)]), n=4)
    add("harness_token", lambda: "sat." + pick3(URLSAFE, 22) + "." + pick3(ALNUM, 24) + "." + pick3(ALNUM, 20), n=4)
    add("huggingface_token", lambda: R3.choice(["hf_", "api_org_"]) + pick3(UPPER + LOWER, 34), n=6)
    add("vault_token", lambda: "hvb." + pick3(URLSAFE, 150), n=4)
    add("sentry_token", lambda: "sntrys_eyJpYXQiO" + pick3(ALNUM + "+/", 40) + "LCJyZWdpb25fdXJs" + pick3(ALNUM + "+/", 40) + "_" + pick3(ALNUM + "+/", 43), n=4)
    add("settlemint_token", lambda: R3.choice(["sm_aat_", "sm_sat_"]) + pick3(ALNUM, 16), n=4)
    add("shippo_token", lambda: "shippo_test_" + pick3(HEX, 40), n=3)
    add("shopify_token", lambda: R3.choice(["shpca_", "shppa_", "shpss_"]) + pick3(HEX, 32), n=6)
    add("sidekiq_secret", lambda: "https://" + pick3(HEX, 8) + ":" + pick3(HEX, 8) + "@" + R3.choice(["gems", "enterprise"]) + ".contribsys.com/",
        ["source '{s}' do", "bundle config set --global {s}", "{s}"], n=6)
    add("slack_token", lambda: R3.choice([
        "xoxb-" + pick3(DIGITS, 12) + "-" + pick3(DIGITS, 13) + "-" + pick3(ALNUM, 24),
        "xoxp-" + "-".join(pick3(DIGITS, 12) for _ in range(3)) + "-" + pick3(HEX, 32),
        "xoxe.xoxp-1-" + pick3(UPPER + DIGITS, 164),
        "xoxe-1-" + pick3(UPPER + DIGITS, 146),
        "xoxa-2-" + pick3(ALNUM, 40),
        "xoxr-" + pick3(ALNUM, 40),
        "xoxs-" + pick3(DIGITS, 10) + "-" + pick3(DIGITS, 11) + "-" + pick3(DIGITS, 12) + "-" + pick3(HEX, 64),
        "xapp-1-A" + pick3(UPPER + DIGITS, 10) + "-" + pick3(DIGITS, 13) + "-" + pick3(HEX, 64),
    ]), n=12)
    add("slack_webhook", lambda: "https://hooks.slack.com/" + R3.choice(["workflows", "triggers"]) + "/" + pick3(ALNUM, 9) + "/" + pick3(ALNUM, 11) + "/" + pick3(ALNUM, 24), n=4)
    add("square_token", lambda: "EAAA" + pick3(URLSAFE, 60), n=3)
    add("stripe_key", lambda: R3.choice(["sk_prod_", "rk_test_"]) + pick3(ALNUM, 40), n=4)
    add("typeform_token", lambda: "tfp_" + pick3(URLSAFE, 59), ["TYPEFORM_TOKEN={s}", "typeform: {s}"], n=3)
    add("yandex_key", lambda: "t1." + pick3(URLSAFE, 40) + "." + pick3(URLSAFE, 86), ["YANDEX_IAM_TOKEN={s}", "yandex_token: {s}"], n=4)
    add("new_relic_key", lambda: R3.choice(["NRJS-" + pick3(HEX, 19), "NRII-" + pick3(LOWER + DIGITS + "-", 32)]), n=6)
    add("planetscale_token", lambda: "pscale_oauth_" + pick3(URLSAFE, 43), n=3)
    add("sourcegraph_token", lambda: "sgp_local_" + pick3(HEX, 40), n=3)
    add("sourcegraph_token", lambda: "sgp_" + pick3(HEX, 40), n=3)
    add("openai_api_key", lambda: "sk-" + R3.choice(["proj", "svcacct", "admin"]) + "-" + pick3(URLSAFE, 74) + "T3BlbkFJ" + pick3(URLSAFE, 74), n=4)
    add("maxmind_license_key", lambda: pick3(ALNUM, 6) + "_" + pick3(ALNUM, 29) + "_mmk",
        ["{s}", "MAXMIND_LICENSE_KEY={s}", "geoipupdate with LicenseKey {s}", '{{"license_key": "{s}"}}'])
    add("sonar_token", lambda: R3.choice(["squ_", "sqp_", "sqa_"]) + pick3(HEX, 40),
        ["{s}", "SONAR_TOKEN={s}", "sonar-scanner -Dsonar.token={s}", "mvn sonar:sonar -Dsonar.login={s}"])
    add("pkcs12", lambda: base64.b64encode(pfx_der(R3.randint(400, 900))).decode(),
        ["{s}", "AZURE_CLIENT_CERTIFICATE={s}", '{{"pfx": "{s}", "passphrase_ref": "vault"}}', "client.p12 as base64: {s}"], n=6)
    add("pkcs12", lambda: wrap(base64.b64encode(pfx_der(R3.randint(400, 900))).decode(), R3.choice([64, 76])),
        ["{s}", "here is the cert bundle (base64 of the .pfx):\n{s}\nthe password is in the vault"], n=6)
    for i in range(12):
        rows.append(("kubernetes_secret", k8s_secret(i)))
    services = [
        ("INTERCOM_ACCESS_TOKEN", lambda: pick3(LOWER + DIGITS + "=_-", 59) + "x"),
        ("LINEAR_CLIENT_SECRET", lambda: pick3(HEX, 32)),
        ("NEW_RELIC_USER_API_ID", lambda: pick3(LOWER + DIGITS, 64)),
        ("newrelic.api_id", lambda: pick3(LOWER + DIGITS, 64)),
        ("PRIVATEAI_API_KEY", lambda: pick3(LOWER + DIGITS, 32)),
        ("private_ai_key", lambda: pick3(LOWER + DIGITS, 32)),
        ("SONAR_TOKEN", lambda: pick3(LOWER + DIGITS, 40)),
        ("sonar.login", lambda: pick3(LOWER + DIGITS, 40)),
        ("BINTRAY_API_KEY", lambda: pick3(LOWER + DIGITS, 73)),
        ("XRAY_ACCESS_TOKEN", lambda: pick3(LOWER + DIGITS, 64)),
        ("NEWYORKTIMES_API_KEY", lambda: pick3(URLSAFE, 32)),
        ("KRAKEN_API_SECRET", lambda: pick3(ALNUM + "/+", 86) + "=="),
        ("KUCOIN_API_KEY", lambda: pick3(HEX, 24)),
        ("launchdarkly_sdk_key", lambda: pick3(URLSAFE, 40)),
        ("LINKEDIN_CLIENT_SECRET", lambda: pick3(LOWER + DIGITS, 16)),
        ("MATTERMOST_TOKEN", lambda: pick3(LOWER + DIGITS, 26)),
        ("MESSAGEBIRD_API_KEY", lambda: pick3(LOWER + DIGITS, 25)),
        ("NETLIFY_AUTH_TOKEN", lambda: pick3(URLSAFE, 43)),
        ("PLAID_SECRET", lambda: pick3(LOWER + DIGITS, 30)),
        ("RAPIDAPI_KEY", lambda: pick3(URLSAFE, 50)),
        ("SENDBIRD_API_TOKEN", lambda: pick3(HEX, 40)),
        ("SQUARESPACE_API_KEY", uuid3),
        ("SUMO_ACCESS_ID", lambda: "su" + pick3(ALNUM, 12)),
        ("TRAVIS_TOKEN", lambda: pick3(LOWER + DIGITS, 22)),
        ("TWITTER_BEARER_TOKEN", lambda: "A" * 22 + pick3(ALNUM + "%", 90)),
        ("ZENDESK_API_TOKEN", lambda: pick3(ALNUM, 40)),
        ("SOURCEGRAPH_TOKEN", lambda: pick3(HEX, 40)),
        ("LOOKER_CLIENT_SECRET", lambda: pick3(ALNUM, 24)),
        ("GITTER_TOKEN", lambda: pick3(LOWER + DIGITS, 40)),
        ("MAPBOX_TOKEN", lambda: "pk." + pick3(LOWER + DIGITS, 60) + "." + pick3(LOWER + DIGITS, 22)),
    ]
    for i, (key, make) in enumerate(services):
        form = ["{k}={v}", '{k}: "{v}"', '"{k}": "{v}"', "export {k}='{v}'"][i % 4]
        rows.append(("service_key", form.format(k=key, v=make())))
    rows += [
        ("password_assignment", '<add key="ClearTextPassword" value="' + pick3(ALNUM, 10) + '!9" />'),
        ("password_assignment", '<packageSourceCredentials><feed><add key="Username" value="ci" /><add key="ClearTextPassword" value="' + pick3(ALNUM, 14) + '" /></feed></packageSourceCredentials>'),
        ("password_assignment", '<add key="Password" value="' + pick3(ALNUM, 12) + '#x" />'),
        ("password_assignment", 'administrator_login_password = "' + pick3(ALNUM, 14) + '"'),
    ]
    # PHP: a variable, an array entry, a constant.
    php_pw = ["bluehorse42x", "ferryboat77", "tidewater9q", "summer2024x", "paddington1", "sommerwind25"]
    php = [
        "$password = '{p}';",
        '$db_pass = "{p}";',
        "$this->password = '{p}';",
        "'password' => '{p}',",
        "define('DB_PASSWORD', '{p}');",
        'define("SMTP_PASS", "{p}");',
        "<?php\n$dbuser = 'app';\n$dbpassword = '{p}';\n$conn = new mysqli($host, $dbuser, $dbpassword);",
        "define( 'DB_PASSWORD', '{p}' );",
        "$config['db_password'] = '{p}';",
        "$pwd='{p}';",
    ]
    for i, form in enumerate(php):
        rows.append(("password_assignment", form.format(p=php_pw[i % len(php_pw)])))
    for key in ["AUTH_KEY", "SECURE_AUTH_SALT", "LOGGED_IN_KEY", "NONCE_SALT"]:
        rows.append(("env_secret", "define('" + key + "', '" + pick3(ALNUM + "!@#%^&*()-_[]{}<>~+=,.;:/?|", 64).replace("'", "x") + "');"))
    # A JWT wrapped in base64 (gitleaks' jwt-base64).
    for _ in range(4):
        header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        payload = b64url(json.dumps({"sub": pick3(DIGITS, 8), "iat": R3.randint(1700000000, 1800000000)}).encode())
        token = header + "." + payload + "." + pick3(URLSAFE, 43)
        rows.append(("jwt", "the header value was " + base64.b64encode(token.encode()).decode()))
    return rows


def gz_code():
    """Manifests that are configuration (refused in a post) but hold no secret: the guard
    must let them through as a progress line."""
    return [
        ("config", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: production\n  region: eu-west-1"),
        ("config", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n  password: {{ .Values.db.password | b64enc }}"),
        ("config", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: empty\ndata: {}"),
        ("config", "kind: Secret\nmetadata:\n  name: db\nstringData:\n  password: ${DB_PASSWORD}"),
        ("config", "kind: Deployment\nspec:\n  template:\n    data:\n      replicas: 3"),
        ("config", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls\ndata:\n  tls.crt: \"\"\n---\nkind: ConfigMap\ndata:\n  mode: cHJvZHVjdGlvbg=="),
    ]


def gz_ordinary():
    rows = []
    public_key = base64.b64encode(b"\x30\x82\x01\x22\x30\x0d\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x01\x01\x05\x00\x03\x82\x01\x0f\x00" + bytes(R3.randrange(256) for _ in range(270))).decode()
    cert = base64.b64encode(b"\x30\x82\x03\x10\x30\x82\x01\xf8\xa0\x03\x02\x01\x02" + bytes(R3.randrange(256) for _ in range(300))).decode()
    rows += [
        ("yaml", "a kind: Secret keeps its values under data: in base64, so use sealed secrets"),
        ("public_key", "the server's public key (DER, base64): " + public_key),
        ("public_key", "cert body: " + cert),
        ("php", "define('DB_PASSWORD', getenv('DB_PASSWORD'));"),
        ("php", "define('AUTH_KEY', 'put your unique phrase here');"),
        ("php", "$password = $_POST['password'];"),
        ("php", "$password = '';"),
        ("php", "$password = password_hash($plain, PASSWORD_DEFAULT);"),
        ("php", "define('WP_DEBUG', false);"),
        ("xml", '<add key="Username" value="deploy" />'),
        ("xml", '<add key="ClearTextPassword" value="%NUGET_PASSWORD%" />'),
        ("xml", '<add key="nuget.org" value="https://api.nuget.org/v3/index.json" />'),
        ("service_talk", "the _gitlab_session cookie expires after a week"),
        ("service_talk", "sonar.login is deprecated, use sonar.token instead"),
        ("service_talk", "linear regression fit: r2 = 0.93, see the linear_model notes"),
        ("service_talk", "the maxmind database is GeoLite2-City.mmdb, refreshed weekly"),
        ("service_talk", "intercom widget is off on the docs site"),
        ("service_talk", "newrelic dashboards show p99 at 180 ms"),
        ("service_talk", "xray tracing is on for the api lambda"),
        ("service_talk", "slack: #deploys has the xoxb- token rotation notes"),
        ("service_talk", "pkcs12 bundles (.pfx) go in the vault, never in the channel"),
        ("service_talk", "sha256~ tokens come from oc whoami -t; do not paste them"),
    ]
    return rows


def write(name, rows):
    with open(HERE / name, "w", encoding="utf-8", newline="\n") as f:
        for kind, text in rows:
            f.write(f"{kind}\t{escape(text)}\n")


if __name__ == "__main__":
    base = (secrets(), code(), ordinary())
    write("secrets.txt", base[0] + more_secrets() + gz_secrets())
    write("code.txt", base[1] + more_code() + gz_code())
    write("ordinary.txt", base[2] + more_ordinary() + gz_ordinary())
    write("disguised.txt", disguised())
