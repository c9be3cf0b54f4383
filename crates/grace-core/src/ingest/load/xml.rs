//! A small pull walk over XML for the ZIP formats (DOCX, ODT, EPUB's
//! package files): start tags with their attributes, end tags and text,
//! names without their namespace prefix. It does not recurse, so nesting
//! depth costs nothing, and it expands no entity that the document
//! declares itself (only the five XML ones and character references), so
//! an entity bomb stays a few bytes.

use quick_xml::events::Event;

use super::LoadError;

/// One step of the walk.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node<'a> {
    /// A start tag (an empty element `<x/>` gives `Open` then `Close`).
    Open {
        /// The local name (`p` for `w:p`).
        name: &'a str,
        /// Its attributes: local names and unescaped values.
        attrs: Vec<(&'a str, String)>,
    },
    /// An end tag.
    Close {
        /// The local name.
        name: &'a str,
    },
    /// Character data (text, CDATA or a resolved reference).
    Text(String),
}

impl Node<'_> {
    /// The value of attribute `name` of an `Open` node.
    pub(super) fn attr(&self, name: &str) -> Option<&str> {
        match self {
            Node::Open { attrs, .. } => attrs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.as_str()),
            _ => None,
        }
    }
}

/// Walks `xml`, calling `visit` for every node in document order.
pub(super) fn walk(
    xml: &str,
    format: &'static str,
    mut visit: impl FnMut(Node<'_>),
) -> Result<(), LoadError> {
    let malformed = |message: String| LoadError::Malformed { format, message };
    let mut reader = quick_xml::Reader::from_str(xml);
    loop {
        let event = reader.read_event().map_err(|e| {
            malformed(format!(
                "XML error at byte {}: {e}",
                reader.error_position()
            ))
        })?;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(event, Event::Empty(_));
                let name = local(e.name().into_inner());
                let mut attrs = Vec::new();
                for a in e.attributes().with_checks(false).flatten() {
                    let key = local(a.key.into_inner());
                    let value = a
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .map(|v| v.into_owned())
                        .unwrap_or_else(|_| a.value.clone().into_owned());
                    attrs.push((key, value));
                }
                visit(Node::Open { name, attrs });
                if empty {
                    visit(Node::Close { name });
                }
            }
            Event::End(e) => visit(Node::Close {
                name: local(e.name().into_inner()),
            }),
            Event::Text(t) => visit(Node::Text(t.xml10_content().into_owned())),
            Event::CData(t) => visit(Node::Text(t.xml10_content().into_owned())),
            Event::GeneralRef(r) => {
                let text = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    _ => predefined(&r).unwrap_or_default().to_string(),
                };
                if !text.is_empty() {
                    visit(Node::Text(text));
                }
            }
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
}

/// A name without its namespace prefix.
fn local(name: &str) -> &str {
    name.rsplit_once(':').map_or(name, |(_, l)| l)
}

/// The five entities XML predefines.
fn predefined(name: &str) -> Option<&'static str> {
    Some(match name {
        "amp" => "&",
        "lt" => "<",
        "gt" => ">",
        "quot" => "\"",
        "apos" => "'",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(xml: &str) -> Vec<String> {
        let mut out = Vec::new();
        walk(xml, "test", |n| {
            out.push(match n {
                Node::Open { name, attrs } => format!("<{name}{attrs:?}"),
                Node::Close { name } => format!("{name}>"),
                Node::Text(t) => t,
            })
        })
        .unwrap();
        out
    }

    #[test]
    fn names_lose_their_prefix_and_references_resolve() {
        let got = nodes(r#"<w:p w:val="a&amp;b"><w:t>x &lt; y &#233;</w:t><w:br/></w:p>"#);
        assert_eq!(
            got,
            [
                r#"<p[("val", "a&b")]"#,
                "<t[]",
                "x ",
                "<",
                " y ",
                "é",
                "t>",
                "<br[]",
                "br>",
                "p>"
            ]
        );
    }

    #[test]
    fn an_entity_bomb_is_not_expanded() {
        let bomb = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<lolz>&lol3;</lolz>"#;
        let text: String = nodes(bomb).concat();
        assert!(text.len() < 100, "{text}");
    }

    #[test]
    fn deep_nesting_and_bad_xml_do_not_panic() {
        let deep = "<a>".repeat(100_000) + &"</a>".repeat(100_000);
        assert_eq!(nodes(&deep).len(), 200_000);
        let err = walk("<a><b></a>", "DOCX", |_| {}).unwrap_err();
        assert!(
            err.to_string().contains("not a readable DOCX file"),
            "{err}"
        );
    }
}
