//! Shoppers and their sessions: each test makes its own through the admin
//! API and signs in through `POST /api/session`, as the shop does.

use super::{ADMIN_TOKEN, TestApp, browser_client};
use api_types::Currency;
use api_types::api::ShopperCreated;
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

/// The password of every shopper [`TestApp::create_account`] makes.
pub const PASSWORD: &str = "a-test-password-long-enough";

/// A shopper's account as the tests use it: the shopper, their one account,
/// and how to sign in as them.
#[derive(Debug, Clone)]
pub struct Account {
    /// The account.
    pub account_id: Uuid,
    /// Its currency.
    pub currency: Currency,
    /// The shopper who owns it.
    pub shopper_id: Uuid,
    /// Their sign-in email.
    pub email: String,
}

impl TestApp {
    /// `POST /api/admin/shoppers` with any JSON.
    pub async fn post_shopper(&self, body: &Value) -> Response {
        self.http
            .post(self.url("/api/admin/shoppers"))
            .bearer_auth(ADMIN_TOKEN)
            .json(body)
            .send()
            .await
            .expect("request sent")
    }

    /// A new shopper with one account of `balance_cents`, and [`TestApp::http`]
    /// signed in as them.
    pub async fn create_account(&self, balance_cents: i64, currency: &str) -> Account {
        let account = self.create_shopper(balance_cents, currency).await;
        self.sign_in_as(&self.http, &account).await;
        account
    }

    /// A new shopper with one account, nobody signed in as them.
    pub async fn create_shopper(&self, balance_cents: i64, currency: &str) -> Account {
        let email = format!("shopper-{}@shop.test", Uuid::new_v4().simple());
        let response = self
            .post_shopper(&json!({
                "email": email,
                "password": PASSWORD,
                "balance_cents": balance_cents,
                "currency": currency,
            }))
            .await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let created: ShopperCreated = response.json().await.expect("shopper body");
        Account {
            account_id: created.account_id,
            currency: currency.parse().expect("a currency"),
            shopper_id: created.shopper_id,
            email,
        }
    }

    /// `POST /api/session` with any JSON, from `client`.
    pub async fn post_session(&self, client: &reqwest::Client, body: &Value) -> Response {
        client
            .post(self.url("/api/session"))
            .json(body)
            .send()
            .await
            .expect("request sent")
    }

    /// Signs `client` in as the shopper of `account`.
    pub async fn sign_in_as(&self, client: &reqwest::Client, account: &Account) {
        let response = self
            .post_session(
                client,
                &json!({"email": account.email, "password": PASSWORD}),
            )
            .await;
        assert_eq!(response.status(), StatusCode::OK);
    }

    /// A new client, signed in as the shopper of `account`.
    pub async fn client_of(&self, account: &Account) -> reqwest::Client {
        let client = browser_client();
        self.sign_in_as(&client, account).await;
        client
    }
}
