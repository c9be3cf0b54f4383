//! Tables as text for the office formats: one line a row, its cells joined
//! with ` | `, except that a two-column row is a term and its description
//! (`term` / `: description`, [`crate::text::blocks`]). A table inside a
//! cell becomes text of that cell.

use crate::text::blocks::DESCRIPTION;

/// One open table: its finished rows, the row and the cell being read.
#[derive(Debug, Default)]
struct Level {
    lines: Vec<String>,
    row: Vec<String>,
    cell: String,
}

/// The tables open at this point of a walk, outermost first.
#[derive(Debug, Default)]
pub(super) struct Tables {
    levels: Vec<Level>,
}

impl Tables {
    /// Whether the walk is inside a table.
    pub(super) fn active(&self) -> bool {
        !self.levels.is_empty()
    }

    pub(super) fn open_table(&mut self) {
        self.levels.push(Level::default());
    }

    pub(super) fn open_row(&mut self) {
        if let Some(l) = self.levels.last_mut() {
            l.row.clear();
        }
    }

    pub(super) fn open_cell(&mut self) {
        if let Some(l) = self.levels.last_mut() {
            l.cell.clear();
        }
    }

    /// Adds text to the cell being read (a paragraph's end adds a space).
    pub(super) fn text(&mut self, text: &str) {
        if let Some(l) = self.levels.last_mut() {
            l.cell.push_str(text);
        }
    }

    pub(super) fn close_cell(&mut self) {
        if let Some(l) = self.levels.last_mut() {
            let cell = l.cell.split_whitespace().collect::<Vec<_>>().join(" ");
            l.row.push(cell);
        }
    }

    pub(super) fn close_row(&mut self) {
        if let Some(l) = self.levels.last_mut() {
            let row = std::mem::take(&mut l.row);
            match row.as_slice() {
                [term, description] if !term.is_empty() && !description.is_empty() => {
                    l.lines.push(format!("{term}\n{DESCRIPTION}{description}"));
                }
                _ if row.iter().any(|c| !c.is_empty()) => l.lines.push(row.join(" | ")),
                _ => {}
            }
        }
    }

    /// Ends the innermost table; an outermost one goes into `out` as a
    /// paragraph.
    pub(super) fn close_table_into(&mut self, out: &mut super::SectionBuilder) {
        if let Some(text) = self.close_table() {
            out.push_text(&text);
            out.paragraph_break();
        }
    }

    /// Ends the innermost table: its text, or `None` when it was inside
    /// another table's cell (its text went there).
    pub(super) fn close_table(&mut self) -> Option<String> {
        let level = self.levels.pop()?;
        let text = level.lines.join("\n");
        match self.levels.last_mut() {
            Some(parent) => {
                parent.cell.push(' ');
                parent.cell.push_str(&text);
                None
            }
            None => Some(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_lines_and_nested_tables_become_cell_text() {
        let mut t = Tables::default();
        t.open_table();
        for row in [["Key", "Meaning", "Since"], ["a", "b", "c"]] {
            t.open_row();
            for cell in row {
                t.open_cell();
                t.text(cell);
                t.close_cell();
            }
            t.close_row();
        }
        t.open_row();
        t.open_cell();
        t.text("outer");
        t.open_table();
        t.open_row();
        t.open_cell();
        t.text("inner");
        t.close_cell();
        t.close_row();
        assert_eq!(t.close_table(), None);
        t.close_cell();
        t.close_row();
        assert_eq!(
            t.close_table().as_deref(),
            Some("Key | Meaning | Since\na | b | c\nouter inner")
        );
        assert!(!t.active());
        assert_eq!(t.close_table(), None);
        // A two-column row: a term and its description.
        t.open_table();
        t.open_row();
        for cell in ["promote", "Copy the release to production."] {
            t.open_cell();
            t.text(cell);
            t.close_cell();
        }
        t.close_row();
        assert_eq!(
            t.close_table().as_deref(),
            Some("promote\n: Copy the release to production.")
        );
    }
}
