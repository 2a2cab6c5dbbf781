//! Integration tests of the checkout backend: the real app over real HTTP,
//! against real PostgreSQL (a fresh database per test) and real Redis.

mod admin;
mod alipay;
mod attempts;
mod auto_refunds;
mod browser_defences;
mod callback_fuzz;
mod callbacks;
mod connections;
mod db_roles;
mod expiry;
mod health;
mod helpers;
mod holds;
mod idempotency;
mod incident;
mod lifecycle;
mod limits;
mod logs;
mod metrics;
mod one_statement;
mod openapi;
mod ops;
mod orders;
mod ownership;
mod pay;
mod reconcile;
mod redis_outage;
mod redis_sentinel;
mod refunds;
mod remote_platform;
mod request_token;
mod sessions;
mod startup;
mod static_files;
mod wechatpay;
