//! The checkout backend: configuration from the environment, then serve.
//! `PLATFORM` must be set (`sandbox`, `remote`, `wechatpay` or `alipay`); see `.env.example`.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    backend::startup::run_from_env().await
}
