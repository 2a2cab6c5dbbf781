//! Text-column encoding for the wire types, so the backend reads them straight
//! from rows (`status AS "status: OrderStatus"`) instead of parsing strings.
//!
//! Behind the `sqlx` feature, which only the backend enables: the payment page
//! compiles this crate for wasm32 and must not pull in a database driver.
//!
//! The types are declared as PostgreSQL `text` (what the columns are), not as a
//! named type: sqlx's derive for enums would declare a type by name, and binding
//! such a value makes each new connection look its OID up first.

use crate::enums::{
    AnomalyKind, CallbackOutcome, CallbackType, LedgerAccountKind, LedgerKind, ReconClass,
};
use crate::{
    AttemptStatus, Currency, OrderStatus, PaymentMethod, PlatformPaymentId, RefundRequester,
    RefundStatus,
};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgTypeInfo, PgValueRef};
use sqlx::{Decode, Encode, Postgres, Type};

/// Implements `Type`, `Encode` and `Decode` for PostgreSQL `text` through the
/// type's `as_str` and `FromStr`: an unknown spelling in a row (or an empty
/// platform payment id) is a decode error.
macro_rules! text_column {
    ($($ty:ty),+ $(,)?) => {$(
        impl Type<Postgres> for $ty {
            fn type_info() -> PgTypeInfo {
                <str as Type<Postgres>>::type_info()
            }

            fn compatible(ty: &PgTypeInfo) -> bool {
                <str as Type<Postgres>>::compatible(ty)
            }
        }

        impl Encode<'_, Postgres> for $ty {
            fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
                <&str as Encode<Postgres>>::encode(self.as_str(), buf)
            }
        }

        impl<'r> Decode<'r, Postgres> for $ty {
            fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
                Ok(<&str as Decode<Postgres>>::decode(value)?.parse()?)
            }
        }
    )+};
}

text_column!(
    OrderStatus,
    AttemptStatus,
    Currency,
    CallbackType,
    CallbackOutcome,
    AnomalyKind,
    LedgerKind,
    RefundStatus,
    RefundRequester,
    PaymentMethod,
    LedgerAccountKind,
    ReconClass,
    PlatformPaymentId,
);
