//! pgbench scripts made from the SQL the handler runs, and pgbench runs.
//!
//! The statements are the product's own files (`backend/sql/`, read through
//! the `backend::db` constants; which ones each path runs is
//! [`crate::handler_sql`]). This module reads them as they are: comments and a
//! trailing `;` are dropped and, where pgbench `\gset`s a row into variables,
//! sqlx's column overrides (`AS "status: OrderStatus"`) are cut back to the
//! plain name. It knows which value each `$n` gets (the values
//! `charge::apply_callback` binds) and turns `$n` into a pgbench expression. A
//! statement it does not know, or a changed parameter count, stops the
//! benchmark with an error instead of measuring something else.
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

    /// The statements it replays and the name of their list.
    fn sql(self) -> (CallbackSql, &'static str) {
        match self {
            Self::New => (NEW_CHARGE_SQL, "NEW_CHARGE_SQL"),
            Self::NewStatements | Self::NewPipelined => (GENERAL_CHARGE_SQL, "GENERAL_CHARGE_SQL"),
            Self::Duplicate => (DUPLICATE_SQL, "DUPLICATE_SQL"),
            Self::DuplicateLookup => (DUPLICATE_LOOKUP_SQL, "DUPLICATE_LOOKUP_SQL"),
        }
    }
}

/// The event type of every benchmark callback.
pub const EVENT_TYPE: &str = "payment.succeeded";
/// Stands in for the SHA-256 of the body: the same length as the real one.
pub const BODY_SHA256: &str = "5e1ec7ed5e1ec7ed5e1ec7ed5e1ec7ed5e1ec7ed5e1ec7ed5e1ec7ed5e1ec7ed";

/// `sql` without its comments (`-- ...` to the end of the line, `/* ... */`,
/// nested as PostgreSQL nests them) and without a trailing `;`; string
/// literals and quoted identifiers are copied as they are. What a comment
/// leaves is whitespace, which pgbench, like PostgreSQL, skips.
pub fn strip_comments(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    while let Some(ch) = rest.chars().next() {
        let skip = if ch == '\'' || ch == '"' {
            let end = rest[1..].find(ch).map_or(rest.len(), |end| end + 2);
            out.push_str(&rest[..end]);
            end
        } else if rest.starts_with("--") {
            rest.find('\n').unwrap_or(rest.len())
        } else if rest.starts_with("/*") {
            let (mut depth, mut at) = (0, 0);
            loop {
                let here = &rest[at..];
                if here.starts_with("/*") {
                    (depth, at) = (depth + 1, at + 2);
                } else if here.starts_with("*/") {
                    (depth, at) = (depth - 1, at + 2);
                    if depth == 0 {
                        break;
                    }
                } else if let Some(c) = here.chars().next() {
                    at += c.len_utf8();
                } else {
                    break;
                }
            }
            out.push(' ');
            at
        } else {
            out.push(ch);
            ch.len_utf8()
        };
        rest = &rest[skip..];
    }
    let code = out.trim();
    code.strip_suffix(';').unwrap_or(code).trim_end().to_owned()
}

/// `sql` with sqlx's column overrides cut back to the plain name
/// (`AS "status: OrderStatus"`, `"total!"`, `"note?"` become `status`,
/// `total`, `note`): pgbench names the variables of a `\gset` after the
/// columns, and refuses such names.
fn plain_column_names(sql: &str) -> String {
    let parts = sql.split('"').enumerate().map(|(i, part)| {
        let (name, _) = part.split_once([':', '!', '?']).unwrap_or((part, ""));
        let name = name.trim_end();
        let plain = name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
        // Every other part is inside quotes.
        match (i % 2 == 1, plain && name.len() < part.len()) {
            (true, true) => name.to_owned(),
            (true, false) => format!("\"{part}\""),
            (false, _) => part.to_owned(),
        }
    });
    parts.collect()
}

/// The values `sql` binds on `path`, as pgbench expressions in `$1..$n`
/// order, and whether its row feeds later statements (`\gset`).
fn binding(sql: &str, path: CallbackPath) -> anyhow::Result<(Vec<String>, bool)> {
    use CallbackPath::{Duplicate, DuplicateLookup, New, NewPipelined, NewStatements};
    let cb = if path.is_new() {
        format!("('{CALLBACK_PREFIX}' || :k)")
    } else {
        ":dup_callback_id".to_owned()
    };
    let (fresh, pay) = (order_no_sql(":k"), format!("('{PAYMENT_PREFIX}' || :k)"));
    let (ev, sha) = (":event_type", ":body_sha256");
    let (dup_order, dup_pay, dup_amount) = (":dup_order_no", ":dup_payment_id", ":dup_amount");
    // After `\gset` the locked row's columns are variables: the handler, too,
    // takes account, amount and currency from the locked order. A pipeline
    // cannot wait for a row, so there they are computed from `k` as the
    // orders were made (`postgres::OrderStock`).
    let piped = path == NewPipelined;
    let (order, account, amount, currency, hold) = if piped {
        let account = "md5('bench-account-' || (:k::bigint % :accounts::bigint))::uuid";
        (fresh.as_str(), account, ":amount", "'EUR'", ":amount")
    } else {
        (
            ":order_no",
            ":account_id",
            ":amount_cents",
            ":currency",
            ":hold_cents",
        )
    };
    let general = matches!(path, NewStatements | NewPipelined);
    let v = |args: &[&str]| args.iter().map(|&a| a.to_owned()).collect::<Vec<_>>();
    let args = match sql {
        s if s == callbacks::CHARGE_IN_ONE_SQL && path == New => {
            v(&[&cb, &fresh, ev, sha, &pay, "NULL", ":amount", "'EUR'"])
        }
        s if s == callbacks::CHARGE_IN_ONE_SQL && path == Duplicate => v(&[
            &cb, dup_order, ev, sha, dup_pay, "NULL", dup_amount, "'EUR'",
        ]),
        s if s == callbacks::SEEN_SQL && general => v(&[&cb, &fresh, ev, sha]),
        s if s == callbacks::SEEN_SQL && path == DuplicateLookup => v(&[&cb, dup_order, ev, sha]),
        s if s == orders::LOCK_WITH_ACCOUNT_SQL && general => return Ok((v(&[&fresh]), !piped)),
        s if s == callbacks::INSERT_SQL && general => v(&[&cb, sha, ev, order, &pay, ":outcome"]),
        s if s == ledger::INSERT_CHARGE_SQL && general => {
            v(&[&cb, order, account, amount, currency, &pay])
        }
        s if s == orders::MARK_PAID_SQL && general => v(&[order]),
        s if s == accounts::DEDUCT_SQL && general => v(&[account, amount, hold]),
        s if s == attempts::SETTLE_SQL && general => v(&[order, "'SUCCEEDED'", &pay]),
        s if s == deliveries::RECORD_SQL && general => {
            v(&[&cb, order, ev, ":outcome", ":http_status"])
        }
        _ => bail!(
            "the callback handler ({path:?} path) runs a statement the benchmark does not know the \
             parameters of; describe it in tools/bench/src/pgbench.rs:\n{sql}"
        ),
    };
    Ok((args, false))
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
        while let Some(&(_, d)) = chars.peek().filter(|(_, d)| d.is_ascii_digit()) {
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

/// The first lines of a generated script: where it comes from.
fn header(source: &str, how: &str) -> String {
    format!(
        "-- Generated by tools/bench from {source}: the statements the handler runs, in its\n\
         -- order, with $n replaced by pgbench variables{how}. Do not edit.\n"
    )
}

/// Order `k` of the transaction, and its amount (as `postgres::order_amount`).
const TAKE_ORDER: &str =
    "\\set k :base + :client_id + :nclients * :i\n\\set i :i + 1\n\\set amount 1000 + :k % 1000\n";

/// The pgbench script of one path, made from the handler's statements.
pub fn script(path: CallbackPath) -> anyhow::Result<String> {
    let (statements, source) = path.sql();
    let pipelined = path == CallbackPath::NewPipelined;
    let mut out = header(
        &format!("bench::handler_sql::{source}"),
        if pipelined {
            ", sent as one pipeline (one round trip)"
        } else {
            ""
        },
    );
    if path.is_new() {
        out.push_str(TAKE_ORDER);
    }
    if pipelined {
        out.push_str("\\startpipeline\n");
    }
    let statement = |out: &mut String, sql: &str| -> anyhow::Result<()> {
        let (args, gset) = binding(sql, path)?;
        let mut text = strip_comments(sql);
        if gset {
            text = plain_column_names(&text);
        }
        out.push_str(&substitute(&text, &args)?);
        out.push_str(if gset { "\n\\gset\n" } else { ";\n" });
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
    if pipelined {
        out.push_str("\\endpipeline\n");
    }
    Ok(out)
}

/// The pgbench script of pay's database work as the handler does it in one
/// round trip: `backend::db::attempts::START_IN_ONE_SQL` (lock order and
/// account, insert the attempt, hold the amount: a wallet payment, as the
/// sandbox's default) for order `k`, taken like the
/// new-callback script's orders, with fresh ids.
pub fn pay_script() -> anyhow::Result<String> {
    let args: Vec<String> = [
        "gen_random_uuid()",
        "gen_random_uuid()",
        &order_no_sql(":k"),
        ":amount",
        "'EUR'",
        "'{\"status\":\"PENDING\"}'::jsonb",
        "now()",
        "'wallet'",
    ]
    .map(str::to_owned)
    .into();
    let mut out = header("backend::db::attempts::START_IN_ONE_SQL", "") + TAKE_ORDER;
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
        ("body_sha256".to_owned(), BODY_SHA256.to_owned()),
    ];
    if path.is_new() {
        vars.push(("outcome".into(), Decision::Charge.outcome().as_str().into()));
    }
    vars
}

/// One pgbench invocation.
pub struct Invocation<'a> {
    /// The script file.
    pub script: &'a Path,
    /// The database's URL (pgbench takes a connection URI as its database).
    pub database_url: &'a str,
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
    /// Runs pgbench and reads its summary and, when logged, its per-transaction latencies.
    pub async fn run(&self) -> anyhow::Result<Run> {
        let threads = self
            .clients
            .min(std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1);
        // -n: no vacuum of pgbench's own tables (there are none); -M prepared: like sqlx.
        let mut args: Vec<String> = ["-n", "-M", "prepared", "-c"].map(str::to_owned).into();
        args.extend([self.clients.to_string(), "-j".into(), threads.to_string()]);
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
        args.push(self.database_url.to_owned());
        let output = Command::new("pgbench")
            .args(&args)
            .kill_on_drop(true)
            .output()
            .await
            .context("cannot run pgbench (install it: apt-get install -y postgresql-client)")?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        let mut run = parse_summary(&String::from_utf8_lossy(&output.stdout), &stderr)?;
        run.clients = self.clients;
        if !output.status.success() && run.errors == 0 {
            bail!("pgbench failed ({}):\n{stderr}", output.status);
        }
        if let Some(prefix) = &self.log_prefix {
            run.latency = Latency::from_micros(&mut read_logs(prefix)?);
        }
        Ok(run)
    }
}

/// Reads `tps`, processed and failed transactions and aborted clients.
fn parse_summary(stdout: &str, stderr: &str) -> anyhow::Result<Run> {
    let first_number = |text: &str| text.split([' ', '/']).next()?.trim().parse::<f64>().ok();
    let mut run = Run::default();
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("tps = ") {
            run.rate = first_number(rest).context("pgbench tps")?;
        } else if let Some(rest) = line.strip_prefix("number of transactions actually processed: ")
        {
            run.ok = first_number(rest).context("pgbench processed count")? as u64;
        } else if let Some(rest) = line.strip_prefix("number of failed transactions: ") {
            let failed = first_number(rest).unwrap_or(0.0) as u64;
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
    if let Some(first) = aborted.first() {
        run.errors += aborted.len() as u64;
        let why = first.split("ERROR:").nth(1).unwrap_or(first).trim();
        run.error_kinds
            .insert(format!("aborted clients ({why})"), aborted.len() as u64);
    }
    Ok(run)
}

/// Latencies (µs) from pgbench's per-transaction logs `<prefix>.<pid>[.<thread>]`,
/// which it removes.
fn read_logs(prefix: &Path) -> anyhow::Result<Vec<u64>> {
    let dir = prefix.parent().context("log prefix has no directory")?;
    let stem = format!(
        "{}.",
        prefix
            .file_name()
            .and_then(|n| n.to_str())
            .context("log prefix is not UTF-8")?
    );
    let mut latencies = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if !entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(&stem))
        {
            continue;
        }
        // client_id transaction_no time script_no time_epoch time_us: time is the latency in µs.
        let text = std::fs::read_to_string(entry.path())?;
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
    use CallbackPath::*;

    #[test]
    fn comments_go_and_string_literals_keep_theirs() {
        let sql = "-- why this statement\nSELECT '--x', \"a--b\", $1 -- why this value\n\
                   FROM t /* a /* nested */ note */ WHERE s = 'it''s -- still text';\n";
        assert_eq!(
            strip_comments(sql),
            "SELECT '--x', \"a--b\", $1 \nFROM t   WHERE s = 'it''s -- still text'"
        );
    }

    #[test]
    fn the_product_statements_read_as_they_are_written() {
        let paths = [New, NewStatements, Duplicate, DuplicateLookup];
        let all = paths
            .iter()
            .flat_map(|path| path.sql().0.statements().collect::<Vec<_>>());
        for sql in all.chain([attempts::START_IN_ONE_SQL]) {
            let stripped = strip_comments(sql);
            if !sql.contains("--") && !sql.contains("/*") {
                assert_eq!(stripped, sql.trim_end(), "changed:\n{sql}");
            }
            let commented = format!("-- Why.\n{stripped} -- and why\n/* a note */;\n");
            assert_eq!(strip_comments(&commented).trim_end(), stripped);
        }
        // The row pgbench `\gset`s: its sqlx type overrides become plain names.
        let lock = plain_column_names(&strip_comments(orders::LOCK_WITH_ACCOUNT_SQL));
        assert!(!lock.contains('"'), "{lock}");
        assert!(lock.contains("o.status AS status,"), "{lock}");
        assert_eq!(
            plain_column_names(
                "SELECT s AS \"status: OrderStatus\", t AS \"total!\", \"Mixed Case\""
            ),
            "SELECT s AS status, t AS total, \"Mixed Case\""
        );
    }

    #[test]
    fn every_script_replays_its_statements_with_every_parameter_bound() -> anyhow::Result<()> {
        for path in [New, NewStatements, NewPipelined, Duplicate, DuplicateLookup] {
            let text = script(path)?;
            let mut at = 0;
            for sql in path.sql().0.statements() {
                let sql = strip_comments(sql);
                let head = sql.split(['$', '"']).next().unwrap_or_default().trim();
                at += text[at..]
                    .find(head)
                    .with_context(|| format!("{path:?} lacks: {sql}"))?;
            }
            let sql_lines = text.lines().filter(|l| !l.starts_with("--"));
            assert!(
                sql_lines.clone().all(|l| !l.contains('$')),
                "{path:?}:\n{text}"
            );
            assert_eq!(
                text.contains("\\gset"),
                path == NewStatements,
                "{path:?}: a pipeline cannot wait for a row"
            );
            assert_eq!(
                text.contains("BEGIN;"),
                path == NewStatements || path == NewPipelined
            );
            assert_eq!(text.contains(":dup_callback_id"), !path.is_new());
        }
        assert!(
            pay_script()?
                .lines()
                .filter(|l| !l.starts_with("--"))
                .all(|l| !l.contains('$'))
        );
        Ok(())
    }

    #[test]
    fn a_changed_statement_is_refused() {
        let args = vec![":a".to_owned()];
        assert!(substitute("SELECT $1, $2", &args).is_err());
        assert!(substitute("SELECT 1", &args).is_err());
        assert_eq!(
            substitute("SELECT $1 + $1", &args).ok().as_deref(),
            Some("SELECT :a + :a")
        );
        assert!(binding("SELECT 1", New).is_err());
    }

    #[test]
    fn pgbench_summaries_and_aborts_are_read() -> anyhow::Result<()> {
        let stdout = "number of transactions actually processed: 1200\n\
                      number of failed transactions: 0 (0.000%)\n\
                      tps = 119.5 (without initial connection time)\n";
        let stderr = "pgbench: error: client 3 script 0 aborted in command 4 query 0: ERROR:  insert or update violates\n";
        let run = parse_summary(stdout, stderr)?;
        assert_eq!((run.ok, run.rate, run.errors), (1200, 119.5, 1));
        Ok(())
    }
}
