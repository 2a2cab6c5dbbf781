//! What the shopper does in the browser: open pages, sign in, type, press
//! buttons, double-click.

use super::{Shopper, TestApp};
use fantoccini::Locator;

impl TestApp {
    /// Opens a path of the app.
    pub async fn goto(&self, path: &str) {
        self.client()
            .goto(&format!("{}{path}", self.address))
            .await
            .expect("the page loads");
    }

    /// Signs in through the `/signin` form, typing the shopper's credentials,
    /// and waits until the page has left for the shop.
    pub async fn sign_in(&self, shopper: Shopper) {
        self.goto("/signin").await;
        self.type_into("signin-email", shopper.email).await;
        self.type_into("signin-password", shopper.password).await;
        self.click("signin-submit").await;
        self.wait_for_path("/").await;
        self.eventually("the shop to show who is signed in", || async {
            (self.text("shopper-email").await.as_deref() == Some(shopper.email)).then_some(())
        })
        .await;
    }

    /// Replaces the text of the input with this id, as typing does.
    pub async fn type_into(&self, id: &str, text: &str) {
        let input = self
            .eventually(&format!("#{id}"), || async {
                self.client().find(Locator::Id(id)).await.ok()
            })
            .await;
        input.clear().await.expect("the input can be cleared");
        input.send_keys(text).await.expect("keys reach the input");
    }

    /// Opens the payment page of `order_no` and waits until "Pay now" can be pressed.
    pub async fn open_pay_page(&self, order_no: &str) {
        self.goto(&format!("/pay/{order_no}")).await;
        self.wait_for_pay_button().await;
    }

    /// Waits until "Pay now" is shown and enabled.
    pub async fn wait_for_pay_button(&self) {
        self.eventually("an enabled Pay now button", || async {
            let button = self.client().find(Locator::Id("pay-button")).await.ok()?;
            button.is_enabled().await.ok()?.then_some(())
        })
        .await;
    }

    /// Presses a button (or anything clickable) by element id.
    pub async fn click(&self, id: &str) {
        self.client()
            .find(Locator::Id(id))
            .await
            .unwrap_or_else(|err| panic!("#{id} is on the page: {err}"))
            .click()
            .await
            .unwrap_or_else(|err| panic!("#{id} can be clicked: {err}"));
    }

    /// A real double click on the element with this id, as the browser's
    /// input system delivers it (two presses and releases of the mouse).
    pub async fn double_click(&self, id: &str) {
        use fantoccini::actions::{InputSource, MOUSE_BUTTON_LEFT, MouseActions, PointerAction};
        let element = self
            .client()
            .find(Locator::Id(id))
            .await
            .unwrap_or_else(|err| panic!("#{id} is on the page: {err}"));
        let double_click = MouseActions::new("mouse".into())
            .then(PointerAction::MoveToElement {
                element,
                duration: None,
                x: 0.0,
                y: 0.0,
            })
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            });
        self.client()
            .perform_actions(double_click)
            .await
            .expect("the double click is performed");
    }
}
