//! The values that cross between a store's code and either database: a
//! parameter is a [`ToValue`], a column is read back with [`FromValue`].
//! The five kinds are SQLite's; PostgreSQL's types map onto them
//! (`BIGINT` and `INTEGER` → integer, `DOUBLE PRECISION` → real, `TEXT`
//! → text, `BYTEA` → blob, `BOOLEAN` → integer 0 or 1).

use std::sync::Arc;

use super::StateError;

/// One value of a parameter or a column.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL `NULL`.
    Null,
    /// A 64-bit integer.
    Integer(i64),
    /// A 64-bit float.
    Real(f64),
    /// UTF-8 text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

/// A Rust value usable as a statement's parameter.
pub trait ToValue {
    /// The value as either database takes it.
    fn to_value(&self) -> Value;
}

/// A Rust value a column can be read as.
pub trait FromValue: Sized {
    /// The column's value as `Self`, or why it is not one.
    fn from_value(value: &Value) -> Result<Self, String>;
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToValue::to_value)
    }
}

impl ToValue for i64 {
    fn to_value(&self) -> Value {
        Value::Integer(*self)
    }
}

impl ToValue for i32 {
    fn to_value(&self) -> Value {
        Value::Integer(i64::from(*self))
    }
}

impl ToValue for u32 {
    fn to_value(&self) -> Value {
        Value::Integer(i64::from(*self))
    }
}

impl ToValue for usize {
    fn to_value(&self) -> Value {
        // Counts and limits: no count reaches 2^63.
        Value::Integer(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}

impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Integer(i64::from(*self))
    }
}

impl ToValue for f64 {
    fn to_value(&self) -> Value {
        Value::Real(*self)
    }
}

impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::Text(self.to_string())
    }
}

impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::Text(self.clone())
    }
}

impl ToValue for [u8] {
    fn to_value(&self) -> Value {
        Value::Blob(self.to_vec())
    }
}

impl ToValue for Vec<u8> {
    fn to_value(&self) -> Value {
        Value::Blob(self.clone())
    }
}

impl<const N: usize> ToValue for [u8; N] {
    fn to_value(&self) -> Value {
        Value::Blob(self.to_vec())
    }
}

impl FromValue for Value {
    fn from_value(value: &Value) -> Result<Self, String> {
        Ok(value.clone())
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::Null => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

impl FromValue for i64 {
    fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::Integer(i) => Ok(*i),
            other => Err(expected("an integer", other)),
        }
    }
}

impl FromValue for u32 {
    fn from_value(value: &Value) -> Result<Self, String> {
        let i = i64::from_value(value)?;
        u32::try_from(i).map_err(|_| format!("{i} is out of range for a 32-bit count"))
    }
}

impl FromValue for usize {
    fn from_value(value: &Value) -> Result<Self, String> {
        let i = i64::from_value(value)?;
        usize::try_from(i).map_err(|_| format!("{i} is not a count"))
    }
}

impl FromValue for bool {
    fn from_value(value: &Value) -> Result<Self, String> {
        Ok(i64::from_value(value)? != 0)
    }
}

impl FromValue for f64 {
    fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::Real(f) => Ok(*f),
            // SQLite keeps a whole REAL as an integer.
            #[allow(clippy::cast_precision_loss)]
            Value::Integer(i) => Ok(*i as f64),
            other => Err(expected("a number", other)),
        }
    }
}

impl FromValue for String {
    fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::Text(s) => Ok(s.clone()),
            other => Err(expected("text", other)),
        }
    }
}

impl FromValue for Vec<u8> {
    fn from_value(value: &Value) -> Result<Self, String> {
        match value {
            Value::Blob(b) => Ok(b.clone()),
            other => Err(expected("bytes", other)),
        }
    }
}

fn expected(what: &str, found: &Value) -> String {
    let kind = match found {
        Value::Null => "NULL",
        Value::Integer(_) => "an integer",
        Value::Real(_) => "a real",
        Value::Text(_) => "text",
        Value::Blob(_) => "bytes",
    };
    format!("expected {what}, found {kind}")
}

/// One row of a result.
#[derive(Debug, Clone)]
pub struct Row {
    pub(super) values: Vec<Value>,
    /// The store, for errors.
    pub(super) place: Arc<str>,
}

impl Row {
    /// Column `i` (from 0) as a `T`.
    pub fn get<T: FromValue>(&self, i: usize) -> Result<T, StateError> {
        let value = self.values.get(i).ok_or_else(|| StateError::Type {
            place: self.place.to_string(),
            column: i,
            message: format!("the row has {} columns", self.values.len()),
        })?;
        T::from_value(value).map_err(|message| StateError::Type {
            place: self.place.to_string(),
            column: i,
            message,
        })
    }
}

/// A statement's parameters: `params![id, name]`, each a [`ToValue`].
#[macro_export]
#[doc(hidden)]
macro_rules! state_params {
    () => { &[] as &[&dyn $crate::state::ToValue] };
    ($($p:expr),+ $(,)?) => {
        &[$(&$p as &dyn $crate::state::ToValue),+] as &[&dyn $crate::state::ToValue]
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_back_as_their_kind_and_refuse_others() {
        assert_eq!(i64::from_value(&7i64.to_value()), Ok(7));
        assert_eq!(f64::from_value(&Value::Integer(2)), Ok(2.0));
        assert_eq!(Option::<String>::from_value(&Value::Null), Ok(None));
        assert_eq!(bool::from_value(&true.to_value()), Ok(true));
        assert!(
            String::from_value(&Value::Integer(1))
                .unwrap_err()
                .contains("expected text, found an integer")
        );
        assert!(u32::from_value(&Value::Integer(-1)).is_err());
        assert_eq!(Some("a").to_value(), Value::Text("a".into()));
        assert_eq!(None::<i64>.to_value(), Value::Null);
    }
}
