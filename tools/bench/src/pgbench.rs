//! pgbench scripts made from the SQL the callback handler runs, and pgbench runs.
//!
//! The statements are `bench::handler_sql::NEW_CHARGE_SQL` and `DUPLICATE_SQL`
//! (what the handler runs: one statement), `GENERAL_CHARGE_SQL` (the same work
//! as the general path's separate statements, replayed one round trip each
//! and pipelined into one round trip) and `DUPLICATE_LOOKUP_SQL` (the least a
//! duplicate costs): the files in `backend/sql/callback/`, which the handler
//! runs through `sqlx::query_file!`, read as they are written. Comments and a
//! trailing `;` are dropped and, where pgbench `\gset`s a row into variables,
//! sqlx's column overrides (`AS "status: OrderStatus"`) are cut back to the
//! plain name; this module knows which value each `$n` gets (the same values
//! `charge::apply_callback` binds) and turns `$n` into a pgbench expression. A
//! statement the handler starts to run that is not described here, or a
//! changed parameter count, stops the benchmark with an error instead of
//! measuring something else.
//!
//! Order `k` of a new callback: client `c` of `n` takes `k = base + c + n * i`
//! in its `i`-th transaction (pgbench keeps `i` per client across transactions).

use crate::handler_sql::{
    CallbackSql, DUPLICATE_LOOKUP_SQL, DUPLICATE_SQL, GENERAL_CHARGE_SQL, NEW_CHARGE_SQL,
};
use crate::postgres::{CALLBACK_PREFIX, PAYMENT_PREFIX, order_no_sql};
use crate::stats::{Latency, Run};
use anyhow::{Context, bail};
use backend::db::{accounts, attempts, callbacks, deliveries, ledger, orders};
use checkout_rules::charge::Decision;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// Which path of the callback handler a script replays, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallbackPath {
    /// A new `payment.succeeded` for a PENDING order, as the handler runs it:
    /// `NEW_CHARGE_SQL`, one statement.
    New,
    /// The same work as the general transaction's statements, one round trip
    /// each: `GENERAL_CHARGE_SQL` (the handler before the one statement).
    NewStatements,
    /// `GENERAL_CHARGE_SQL` sent as one pipeline: one round trip, the locked
    /// row's values computed from `k` instead of read back.
    NewPipelined,
    /// A callback id seen before, same body, as the handler runs it: `DUPLICATE_SQL`.
    Duplicate,
    /// The least a duplicate costs: `DUPLICATE_LOOKUP_SQL`.
    DuplicateLookup,
}

impl CallbackPath {
    /// Whether it charges a fresh order (else it replays one delivered callback).
    pub fn is_new(self) -> bool {
        matches!(self, Self::New | Self::NewStatements | Self::NewPipelined)
    }

    /// The statements it replays and where they come from.
    fn sql(self) -> (CallbackSql, &'static str) {
        match self {
            Self::New => (NEW_CHARGE_SQL, "bench::handler_sql::NEW_CHARGE_SQL"),
            Self::NewStatements | Self::NewPipelined => {
                (GENERAL_CHARGE_SQL, "bench::handler_sql::GENERAL_CHARGE_SQL")
            }
            Self::Duplicate => (DUPLICATE_SQL, "bench::handler_sql::DUPLICATE_SQL"),
            Self::DuplicateLookup => (
                DUPLICATE_LOOKUP_SQL,
                "bench::handler_sql::DUPLICATE_LOOKUP_SQL",
            ),
        }
    }
}

/// The event type of every benchmark callback.
pub const EVENT_TYPE: &str = "payment.succeeded";
/// Stands in for the SHA-256 of the body: the same length as the real one.
pub const BODY_SHA256: &str = "5e1ec7ed5e1ec7ed5e1ec7ed5e1ec7ed5e1ec7ed5e1ec7ed5e1ec7ed5e1ec7ed";

/// `sql` without its comments (`-- ...` to the end of the line, `/* ... */`,
/// nested as PostgreSQL nests them) and without a trailing `;`. String
/// literals, quoted identifiers and dollar-quoted bodies are copied as they
/// are; a line that held only a comment goes whole.
pub fn strip_comments(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    // Whether the line being written had anything but a comment and spaces.
    let mut line_has_code = false;
    let mut line_had_comment = false;
    while let Some(ch) = rest.chars().next() {
        let quoted_end = match ch {
            '\'' | '"' => rest[1..].find(ch).map(|end| end + 2),
            '$' => dollar_quote(rest),
            _ => None,
        };
        if let Some(end) = quoted_end {
            out.push_str(&rest[..end]);
            line_has_code = true;
            rest = &rest[end..];
        } else if rest.starts_with("--") {
            rest = &rest[rest.find('\n').unwrap_or(rest.len())..];
            line_had_comment = true;
        } else if rest.starts_with("/*") {
            let mut depth = 0_usize;
            let mut at = 0;
            while at < rest.len() {
                if rest[at..].starts_with("/*") {
                    depth += 1;
                    at += 2;
                } else if rest[at..].starts_with("*/") {
                    depth -= 1;
                    at += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    at += rest[at..].chars().next().map_or(1, char::len_utf8);
                }
            }
            // A space, so that `a/* */b` stays two words.
            out.push(' ');
            rest = &rest[at..];
            line_had_comment = true;
        } else {
            if ch == '\n' {
                let line_start = out.rfind('\n').map_or(0, |i| i + 1);
                if line_had_comment {
                    out.truncate(out[line_start..].trim_end().len() + line_start);
                    if !line_has_code {
                        out.truncate(line_start);
                        rest = &rest[1..];
                        line_had_comment = false;
                        continue;
                    }
                }
                line_has_code = false;
                line_had_comment = false;
            } else if !ch.is_whitespace() {
                line_has_code = true;
            }
            out.push(ch);
            rest = &rest[ch.len_utf8()..];
        }
    }
    let code = out.trim_end();
    code.strip_suffix(';').unwrap_or(code).trim_end().to_owned()
}

/// The length of the dollar-quoted body `$tag$...$tag$` that `sql` starts
/// with, if it starts one (`$1`, a parameter, does not).
fn dollar_quote(sql: &str) -> Option<usize> {
    let tag_end = sql[1..].find('$')? + 2;
    let tag = &sql[..tag_end];
    let name = &tag[1..tag.len() - 1];
    let is_tag = name
        .chars()
        .enumerate()
        .all(|(i, c)| c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()));
    if !is_tag {
        return None;
    }
    Some(tag_end + sql[tag_end..].find(tag)? + tag.len())
}

/// `sql` with sqlx's column overrides cut back to the plain name
/// (`AS "status: OrderStatus"`, `"total!"`, `"note?"` become `status`,
/// `total`, `note`): pgbench names the variables of a `\gset` after the
/// columns, and refuses such names.
fn plain_column_names(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut parts = sql.split('"');
    out.push_str(parts.next().unwrap_or_default());
    for (i, part) in parts.enumerate() {
        // After the first part, every other one is inside quotes.
        let plain = part
            .split([':', '!', '?'])
            .next()
            .unwrap_or(part)
            .trim_end();
        let is_override = plain.len() < part.len()
            && plain.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
        if i % 2 == 0 && is_override {
            out.push_str(plain);
        } else if i % 2 == 0 {
            out.push('"');
            out.push_str(part);
            out.push('"');
        } else {
            out.push_str(part);
        }
    }
    out
}

/// The values one statement binds, as pgbench expressions in `$1..$n` order,
/// and whether its row feeds later statements (`\gset`).
struct Binding {
    args: Vec<String>,
    gset: bool,
}

fn binding(sql: &str, path: CallbackPath) -> anyhow::Result<Binding> {
    let callback_id = if path.is_new() {
        format!("('{CALLBACK_PREFIX}' || :k)")
    } else {
        ":dup_callback_id".to_owned()
    };
    let fresh_order = order_no_sql(":k");
    let payment_id = format!("('{PAYMENT_PREFIX}' || :k)");
    let plain = |args: &[&str]| Binding {
        args: args.iter().map(|&a| a.to_owned()).collect(),
        gset: false,
    };
    // After `\gset` the locked row's columns are variables: the handler, too,
    // takes account, amount and currency from the locked order. A pipeline
    // cannot wait for a row, so there they are computed from `k` as the
    // orders were made (`postgres::OrderStock`).
    let pipelined = path == CallbackPath::NewPipelined;
    let account = if pipelined {
        "md5('bench-account-' || (:k::bigint % :accounts::bigint))::uuid".to_owned()
    } else {
        ":account_id".to_owned()
    };
    let (order, amount, currency, hold) = if pipelined {
        (fresh_order.as_str(), ":amount", "'EUR'", ":amount")
    } else {
        (":order_no", ":amount_cents", ":currency", ":hold_cents")
    };
    let general = matches!(
        path,
        CallbackPath::NewStatements | CallbackPath::NewPipelined
    );
    let binding = match sql {
        s if s == callbacks::CHARGE_IN_ONE_SQL && path == CallbackPath::New => plain(&[
            &callback_id,
            &fresh_order,
            ":event_type",
            ":body_sha256",
            &payment_id,
            "NULL",
            ":amount",
            "'EUR'",
        ]),
        s if s == callbacks::CHARGE_IN_ONE_SQL && path == CallbackPath::Duplicate => plain(&[
            &callback_id,
            ":dup_order_no",
            ":event_type",
            ":body_sha256",
            ":dup_payment_id",
            "NULL",
            ":dup_amount",
            "'EUR'",
        ]),
        s if s == callbacks::SEEN_SQL && general => {
            plain(&[&callback_id, &fresh_order, ":event_type", ":body_sha256"])
        }
        s if s == callbacks::SEEN_SQL && path == CallbackPath::DuplicateLookup => {
            plain(&[&callback_id, ":dup_order_no", ":event_type", ":body_sha256"])
        }
        s if s == orders::LOCK_WITH_ACCOUNT_SQL && general => Binding {
            args: vec![fresh_order.clone()],
            gset: !pipelined,
        },
        s if s == callbacks::INSERT_SQL && general => plain(&[
            &callback_id,
            ":body_sha256",
            ":event_type",
            order,
            &payment_id,
            ":outcome",
        ]),
        s if s == ledger::INSERT_CHARGE_SQL && general => {
            plain(&[&callback_id, order, &account, amount, currency, &payment_id])
        }
        s if s == orders::MARK_PAID_SQL && general => plain(&[order]),
        s if s == accounts::DEDUCT_SQL && general => plain(&[&account, amount, hold]),
        s if s == attempts::SETTLE_SQL && general => plain(&[order, "'SUCCEEDED'", &payment_id]),
        s if s == deliveries::RECORD_SQL && general => plain(&[
            &callback_id,
            order,
            ":event_type",
            ":outcome",
            ":http_status",
        ]),
        _ => bail!(
            "the callback handler ({path:?} path) runs a statement the benchmark does not know the \
             parameters of; describe it in tools/bench/src/pgbench.rs:\n{sql}"
        ),
    };
    Ok(binding)
}

/// The pgbench expressions a statement's `$1..$n` are replaced with.
pub fn bound_expressions(sql: &str, path: CallbackPath) -> anyhow::Result<Vec<String>> {
    Ok(binding(sql, path)?.args)
}

/// Replaces `$1..$n` with `args[0..n]`; every argument must be used.
fn substitute(sql: &str, args: &[String]) -> anyhow::Result<String> {
    let mut out = String::with_capacity(sql.len() + 64);
    let mut used = BTreeSet::new();
    let mut chars = sql.char_indices().peekable();
    while let Some((_, ch)) = chars.next() {
        if ch != '$' {
            out.push(ch);
            continue;
        }
        let mut digits = String::new();
        while let Some(&(_, d)) = chars.peek() {
            if !d.is_ascii_digit() {
                break;
            }
            digits.push(d);
            chars.next();
        }
        if digits.is_empty() {
            out.push('$');
            continue;
        }
        let n: usize = digits.parse()?;
        let arg = n
            .checked_sub(1)
            .and_then(|i| args.get(i))
            .with_context(|| {
                format!(
                    "${n} has no value (the benchmark knows {}); the statement changed:\n{sql}",
                    args.len()
                )
            })?;
        used.insert(n);
        out.push_str(arg);
    }
    if used.len() != args.len() {
        bail!(
            "the statement uses {} parameters, the benchmark binds {}; it changed:\n{sql}",
            used.len(),
            args.len()
        );
    }
    Ok(out)
}

/// The pgbench script of one path, made from the handler's statements. With
/// `ping`, each transaction starts with a bare Sync round trip (an empty pipeline),
/// like the pool's health check at each checkout.
pub fn script(path: CallbackPath, ping: bool) -> anyhow::Result<String> {
    let (statements, source) = path.sql();
    let mut out = format!(
        "-- Generated by the `bench` crate from {source}: the statements the callback\n\
         -- handler runs, in its order, with $n replaced by pgbench variables{}. Do not edit.\n",
        if path == CallbackPath::NewPipelined {
            ", sent as one pipeline (one round trip)"
        } else {
            ""
        }
    );
    if path.is_new() {
        out.push_str("\\set k :base + :client_id + :nclients * :i\n\\set i :i + 1\n");
        out.push_str("\\set amount 1000 + :k % 1000\n");
    }
    if ping {
        out.push_str("\\startpipeline\n\\endpipeline\n");
    }
    if path == CallbackPath::NewPipelined {
        out.push_str("\\startpipeline\n");
    }
    let statement = |out: &mut String, sql: &str| -> anyhow::Result<()> {
        let binding = binding(sql, path)?;
        let mut text = strip_comments(sql);
        if binding.gset {
            text = plain_column_names(&text);
        }
        out.push_str(&substitute(&text, &binding.args)?);
        out.push_str(if binding.gset { "\n\\gset\n" } else { ";\n" });
        Ok(())
    };
    for sql in statements.before_tx {
        statement(&mut out, sql)?;
    }
    if !statements.in_tx.is_empty() {
        out.push_str("BEGIN;\n");
        for sql in statements.in_tx {
            statement(&mut out, sql)?;
        }
        out.push_str("COMMIT;\n");
    }
    if path == CallbackPath::NewPipelined {
        out.push_str("\\endpipeline\n");
    }
    Ok(out)
}

/// The pgbench script of pay's database work as the handler does it in one
/// round trip: `backend::db::attempts::START_IN_ONE_SQL` (lock order and
/// account, insert the attempt, hold the amount) for order `k`, taken like the
/// new-callback script's orders (`base`, `nclients`, `i`), with fresh ids.
pub fn pay_script() -> anyhow::Result<String> {
    let args: Vec<String> = [
        "gen_random_uuid()",
        "gen_random_uuid()",
        &order_no_sql(":k"),
        ":amount",
        "'EUR'",
        "'{\"status\":\"PENDING\"}'::jsonb",
        "now()",
    ]
    .iter()
    .map(|&a| a.to_owned())
    .collect();
    let mut out =
        "-- Generated by the `bench` crate from backend::db::attempts::START_IN_ONE_SQL: pay's\n\
                   -- attempt and hold in one statement, as the handler runs it. Do not edit.\n\
                   \\set k :base + :client_id + :nclients * :i\n\\set i :i + 1\n\
                   \\set amount 1000 + :k % 1000\n"
            .to_owned();
    out.push_str(&substitute(
        &strip_comments(attempts::START_IN_ONE_SQL),
        &args,
    )?);
    out.push_str(";\n");
    Ok(out)
}

/// The `-D` variables a script of `path` needs besides the per-run ones.
pub fn constants(path: CallbackPath) -> Vec<(String, String)> {
    let mut vars = vec![
        ("event_type".to_owned(), EVENT_TYPE.to_owned()),
        ("http_status".to_owned(), "200".to_owned()),
    ];
    vars.push(("body_sha256".into(), BODY_SHA256.into()));
    if path.is_new() {
        vars.push(("outcome".into(), Decision::Charge.outcome().as_str().into()));
    }
    vars
}

/// One pgbench invocation.
pub struct Invocation<'a> {
    /// The script file.
    pub script: &'a Path,
    /// `-h -p -U` of the server.
    pub server_args: Vec<String>,
    /// Database name.
    pub database: &'a str,
    /// `-c`.
    pub clients: usize,
    /// `-T`, or `-t 1` per client when `None`.
    pub duration: Option<Duration>,
    /// `-D name=value`.
    pub vars: Vec<(String, String)>,
    /// Per-transaction log prefix (`--log --log-prefix`), for latency percentiles.
    pub log_prefix: Option<PathBuf>,
}

impl Invocation<'_> {
    /// The command line, as a person would type it.
    pub fn command_line(&self) -> Vec<String> {
        let threads = self
            .clients
            .min(std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1);
        // -n: no vacuum of pgbench's own tables (there are none); -M prepared: like sqlx.
        let mut args: Vec<String> = vec![
            "pgbench".into(),
            "-n".into(),
            "-M".into(),
            "prepared".into(),
            "-c".into(),
            self.clients.to_string(),
            "-j".into(),
            threads.to_string(),
        ];
        match self.duration {
            Some(duration) => args.extend(["-T".into(), duration.as_secs().max(1).to_string()]),
            None => args.extend(["-t".into(), "1".into()]),
        }
        for (name, value) in &self.vars {
            args.extend(["-D".into(), format!("{name}={value}")]);
        }
        if let Some(prefix) = &self.log_prefix {
            args.extend(["--log".into(), format!("--log-prefix={}", prefix.display())]);
        }
        args.extend(["-f".into(), self.script.display().to_string()]);
        args.extend(self.server_args.iter().cloned());
        args.push(self.database.to_owned());
        args
    }

    /// Runs pgbench and reads its summary and, when logged, its per-transaction latencies.
    pub async fn run(&self) -> anyhow::Result<Run> {
        let args = self.command_line();
        let output = Command::new(&args[0])
            .args(&args[1..])
            .kill_on_drop(true)
            .output()
            .await
            .context("cannot run pgbench (install it: apt-get install -y postgresql-client)")?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let mut run = parse_summary(&stdout, &stderr)?;
        run.clients = self.clients;
        if !output.status.success() && run.errors == 0 {
            bail!("pgbench failed ({}):\n{stderr}", output.status);
        }
        if let Some(prefix) = &self.log_prefix {
            let mut latencies = read_logs(prefix)?;
            run.latency = Latency::from_micros(&mut latencies);
        }
        Ok(run)
    }
}

/// Reads `tps`, processed and failed transactions and aborted clients.
fn parse_summary(stdout: &str, stderr: &str) -> anyhow::Result<Run> {
    let mut run = Run::default();
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("tps = ") {
            run.rate = rest
                .split_whitespace()
                .next()
                .and_then(|v| v.parse().ok())
                .context("pgbench tps")?;
        } else if let Some(rest) = line.strip_prefix("number of transactions actually processed: ")
        {
            let done = rest.split('/').next().unwrap_or(rest).trim();
            run.ok = done.parse().context("pgbench processed count")?;
        } else if let Some(rest) = line.strip_prefix("number of failed transactions: ") {
            let failed: u64 = rest
                .split_whitespace()
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            if failed > 0 {
                run.errors += failed;
                run.error_kinds.insert("failed transactions".into(), failed);
            }
        }
    }
    let aborted: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("aborted in command"))
        .collect();
    if !aborted.is_empty() {
        run.errors += aborted.len() as u64;
        let first = aborted[0]
            .split("ERROR:")
            .nth(1)
            .unwrap_or(aborted[0])
            .trim();
        run.error_kinds
            .insert(format!("aborted clients ({first})"), aborted.len() as u64);
    }
    Ok(run)
}

/// Latencies (µs) from pgbench's per-transaction logs `<prefix>.<pid>[.<thread>]`.
fn read_logs(prefix: &Path) -> anyhow::Result<Vec<u64>> {
    let dir = prefix.parent().context("log prefix has no directory")?;
    let stem = prefix
        .file_name()
        .and_then(|n| n.to_str())
        .context("log prefix is not UTF-8")?
        .to_owned();
    let mut latencies = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(&format!("{stem}.")) {
            continue;
        }
        let text = std::fs::read_to_string(entry.path())?;
        // client_id transaction_no time script_no time_epoch time_us: time is the latency in µs.
        latencies.extend(
            text.lines()
                .filter_map(|line| line.split_whitespace().nth(2)?.parse::<u64>().ok()),
        );
        std::fs::remove_file(entry.path())?;
    }
    Ok(latencies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_go_and_string_literals_keep_theirs() {
        let sql = "-- why this statement\nSELECT '--x', \"a--b\", $1 -- why this value\n\
                   FROM t /* a /* nested */ note */ WHERE s = 'it''s -- still text';\n";
        assert_eq!(
            strip_comments(sql),
            "SELECT '--x', \"a--b\", $1\nFROM t   WHERE s = 'it''s -- still text'"
        );
        let dollar = "SELECT $tag$ -- kept $tag$, $2 -- gone";
        assert_eq!(strip_comments(dollar), "SELECT $tag$ -- kept $tag$, $2");
        let commented = format!("-- Why.\n{} -- guard\n;\n", orders::MARK_PAID_SQL.trim());
        assert_eq!(strip_comments(&commented), orders::MARK_PAID_SQL.trim());
    }

    #[test]
    fn the_product_statements_read_as_they_are_written() {
        let paths = [
            CallbackPath::New,
            CallbackPath::NewStatements,
            CallbackPath::Duplicate,
            CallbackPath::DuplicateLookup,
        ];
        let all = paths
            .iter()
            .flat_map(|path| path.sql().0.statements().collect::<Vec<_>>());
        for sql in all.chain([attempts::START_IN_ONE_SQL]) {
            assert_eq!(strip_comments(sql), sql.trim_end(), "changed:\n{sql}");
        }
        assert_eq!(
            plain_column_names(orders::LOCK_WITH_ACCOUNT_SQL),
            orders::LOCK_WITH_ACCOUNT_SQL
        );
        assert_eq!(
            plain_column_names(
                "SELECT s AS \"status: OrderStatus\", t AS \"total!\", \"Mixed Case\""
            ),
            "SELECT s AS status, t AS total, \"Mixed Case\""
        );
    }

    #[test]
    fn the_general_path_script_replays_every_statement_in_order() -> anyhow::Result<()> {
        let script = script(CallbackPath::NewStatements, false)?;
        assert!(script.contains("BEGIN;"));
        assert!(script.trim_end().ends_with("COMMIT;"));
        let mut at = 0;
        for sql in GENERAL_CHARGE_SQL.statements() {
            let head: String = sql.split('$').next().unwrap_or(sql).to_owned();
            let found = script[at..]
                .find(head.trim())
                .with_context(|| format!("missing or out of order: {sql}"))?;
            at += found;
        }
        let sql: Vec<&str> = script.lines().filter(|l| !l.starts_with("--")).collect();
        assert!(
            sql.iter().all(|line| !line.contains('$')),
            "every $n is replaced:\n{script}"
        );
        assert!(script.contains("\\gset"));
        Ok(())
    }

    #[test]
    fn every_script_replaces_every_parameter() -> anyhow::Result<()> {
        for path in [
            CallbackPath::New,
            CallbackPath::NewStatements,
            CallbackPath::NewPipelined,
            CallbackPath::Duplicate,
            CallbackPath::DuplicateLookup,
        ] {
            let text = script(path, false)?;
            let sql: Vec<&str> = text.lines().filter(|l| !l.starts_with("--")).collect();
            assert!(
                sql.iter().all(|line| !line.contains('$')),
                "{path:?}:\n{text}"
            );
        }
        let pipelined = script(CallbackPath::NewPipelined, false)?;
        assert!(pipelined.contains("\\startpipeline") && pipelined.contains("\\endpipeline"));
        assert!(
            !pipelined.contains("\\gset"),
            "a pipeline cannot wait for a row"
        );
        let one = script(CallbackPath::New, false)?;
        assert!(
            !one.contains("BEGIN;"),
            "the handler's new callback is one statement"
        );
        let pay = pay_script()?;
        assert!(
            pay.lines()
                .filter(|l| !l.starts_with("--"))
                .all(|l| !l.contains('$'))
        );
        Ok(())
    }

    #[test]
    fn the_duplicate_script_uses_the_fixed_callback_id() -> anyhow::Result<()> {
        let script = script(CallbackPath::Duplicate, false)?;
        assert!(script.contains(":dup_callback_id"));
        assert!(!script.contains(":k"));
        Ok(())
    }

    #[test]
    fn the_ping_is_an_empty_pipeline_before_the_first_statement() -> anyhow::Result<()> {
        let script = script(CallbackPath::NewStatements, true)?;
        let ping = script
            .find("\\startpipeline\n\\endpipeline")
            .context("ping")?;
        let first = script.find("WITH seen").context("first statement")?;
        assert!(ping < first);
        Ok(())
    }

    #[test]
    fn a_statement_with_more_parameters_than_known_is_refused() {
        let args = vec![":a".to_owned()];
        assert!(substitute("SELECT $1, $2", &args).is_err());
        assert!(substitute("SELECT 1", &args).is_err());
        assert_eq!(
            substitute("SELECT $1 + $1", &args).ok().as_deref(),
            Some("SELECT :a + :a")
        );
    }

    #[test]
    fn an_unknown_statement_is_refused() {
        assert!(binding("SELECT 1", CallbackPath::New).is_err());
    }

    #[test]
    fn pgbench_summaries_and_aborts_are_read() -> anyhow::Result<()> {
        let stdout = "number of transactions actually processed: 1200\n\
                      number of failed transactions: 0 (0.000%)\n\
                      tps = 119.5 (without initial connection time)\n";
        let stderr = "pgbench: error: client 3 script 0 aborted in command 4 query 0: ERROR:  insert or update violates\n";
        let run = parse_summary(stdout, stderr)?;
        assert_eq!(run.ok, 1200);
        assert_eq!(run.rate, 119.5);
        assert_eq!(run.errors, 1);
        Ok(())
    }
}
