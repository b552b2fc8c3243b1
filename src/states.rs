//! States are enums. Each family of states (a session's, a hero's, a mission's, a tool use's, a
//! gap's, a claim's, ...) is an enum in the module that owns the concept, declared with
//! [`states!`](crate::states::states): its words are written once, there. The enum is stored
//! in SQLite as its word (`ToSql`/`FromSql`), shown in JSON as its word (`Serialize`/
//! `Deserialize`), and listed in order (`ALL`, `NAMES`) for query validation and the OpenAPI
//! description. Reading a word the enum does not know is an error, never a panic.

/// A family of states: what every state enum can do, for code that works on any of them
/// (query validation).
pub trait Family: Copy + 'static {
    /// Its words, in the order the API lists them.
    const NAMES: &'static [&'static str];

    /// The state a word names, if any.
    fn parse(text: &str) -> Option<Self>;
}

/// Declares a state enum: each variant with the word that stores and shows it.
///
/// ```text
/// states! {
///     /// A gap's `status`.
///     pub enum GapStatus {
///         Open = "open",
///         Closed = "closed",
///     }
/// }
/// ```
macro_rules! states {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$variant_meta:meta])* $variant:ident = $word:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $($(#[$variant_meta])* $variant,)+
        }

        impl $name {
            /// Every state, in the order the API lists them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The word of every state, in the same order.
            pub const NAMES: &'static [&'static str] = &[$($word),+];

            /// The word that stores and shows it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }

            /// The state a word names, if any.
            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($word => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl $crate::states::Family for $name {
            const NAMES: &'static [&'static str] = $name::NAMES;

            fn parse(text: &str) -> Option<$name> {
                $name::parse(text)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                $name::parse(&text)
                    .ok_or_else(|| serde::de::Error::unknown_variant(&text, $name::NAMES))
            }
        }

        impl rusqlite::types::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(
                value: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<$name> {
                let text = value.as_str()?;
                $name::parse(text).ok_or_else(|| {
                    rusqlite::types::FromSqlError::Other(
                        format!("{text:?} is not a {}", stringify!($name)).into(),
                    )
                })
            }
        }
    };
}

pub(crate) use states;

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    states! {
        /// A test family.
        enum Light {
            Green = "green",
            /// Documented variants keep their docs.
            AmberFlashing = "amber_flashing",
        }
    }

    #[test]
    fn a_state_is_its_word_in_json_and_in_sql() {
        assert_eq!(Light::NAMES, ["green", "amber_flashing"]);
        assert_eq!(Light::ALL, [Light::Green, Light::AmberFlashing]);
        let json = serde_json::to_string(&Light::AmberFlashing).unwrap();
        assert_eq!(json, r#""amber_flashing""#);
        assert_eq!(
            serde_json::from_str::<Light>(&json).unwrap(),
            Light::AmberFlashing
        );
        let conn = Connection::open_in_memory().unwrap();
        let (stored, back): (String, Light) = conn
            .query_row("SELECT ?1, ?1", [Light::Green], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((stored.as_str(), back), ("green", Light::Green));
    }

    #[test]
    fn an_unknown_word_is_an_error_not_a_panic() {
        assert!(serde_json::from_str::<Light>(r#""red""#).is_err());
        assert_eq!(Light::parse("Green"), None);
        let conn = Connection::open_in_memory().unwrap();
        let read = conn.query_row("SELECT 'red'", [], |r| r.get::<_, Light>(0));
        assert!(matches!(
            read,
            Err(rusqlite::Error::FromSqlConversionFailure(..))
        ));
        let number = conn.query_row("SELECT 1", [], |r| r.get::<_, Light>(0));
        assert!(matches!(
            number,
            Err(rusqlite::Error::InvalidColumnType(..))
        ));
    }
}
