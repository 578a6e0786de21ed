//! The one table every printer uses: columns with a heading and an alignment, rows of cells
//! already formatted (by [`crate::units`]), rendered for the terminal (padded to the widest
//! cell, in characters) or as markdown (`---:` under right-aligned columns). `check`, `list`,
//! `allocs`, `load`/`compare` and the quick compare's long table print through it, so a mark or
//! a column added to one reads the same everywhere.

use std::fmt::Write as _;

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    /// Names and words.
    Left,
    /// Numbers.
    Right,
}

/// A table: headings, then rows of cells.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    columns: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these columns and no rows.
    pub(crate) fn new<S: Into<String>>(columns: impl IntoIterator<Item = (S, Align)>) -> Table {
        Table {
            columns: columns.into_iter().map(|(h, a)| (h.into(), a)).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells at its end are empty, extra ones are kept without a heading.
    pub(crate) fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// The alignment of column `i` (a cell past the headings is left-aligned).
    fn align(&self, i: usize) -> Align {
        self.columns.get(i).map_or(Align::Left, |(_, a)| *a)
    }

    /// How many columns the table has: its headings, or its longest row.
    fn column_count(&self) -> usize {
        self.rows
            .iter()
            .map(Vec::len)
            .chain([self.columns.len()])
            .max()
            .unwrap_or(0)
    }

    /// Each column's width in characters: its widest cell or heading.
    fn widths(&self) -> Vec<usize> {
        (0..self.column_count())
            .map(|i| {
                let head = self.columns.get(i).map_or(0, |(h, _)| h.chars().count());
                self.rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .map(|c| c.chars().count())
                    .chain([head])
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// For the terminal: `indent`, then the cells padded to their column and separated by two
    /// spaces, without trailing blanks.
    pub(crate) fn terminal(&self, indent: &str) -> String {
        let widths = self.widths();
        let mut out = String::new();
        let heads: Vec<&str> = self.columns.iter().map(|(h, _)| h.as_str()).collect();
        let lines = std::iter::once(heads).chain(
            self.rows
                .iter()
                .map(|r| r.iter().map(String::as_str).collect()),
        );
        for cells in lines {
            let mut line = String::from(indent);
            for (i, width) in widths.iter().enumerate() {
                let cell = cells.get(i).copied().unwrap_or("");
                if i > 0 {
                    line.push_str("  ");
                }
                let pad = width - cell.chars().count();
                match self.align(i) {
                    Align::Left => {
                        line.push_str(cell);
                        line.extend(std::iter::repeat_n(' ', pad));
                    }
                    Align::Right => {
                        line.extend(std::iter::repeat_n(' ', pad));
                        line.push_str(cell);
                    }
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        out
    }

    /// As markdown for a file: a heading row, the rule (`---:` under right-aligned columns), the
    /// rows, each cell as it is (`| a | b |`), so that a line reads the same whatever else the
    /// column holds.
    pub(crate) fn markdown(&self) -> String {
        self.markdown_with(false)
    }

    /// As markdown for the terminal: the same table with every column padded to its widest
    /// cell, so that it reads as columns before it is rendered.
    pub(crate) fn markdown_aligned(&self) -> String {
        self.markdown_with(true)
    }

    fn markdown_with(&self, aligned: bool) -> String {
        let widths: Vec<usize> = if aligned {
            self.widths()
        } else {
            vec![0; self.column_count()]
        };
        let mut out = String::new();
        let row = |out: &mut String, cells: &[&str]| {
            out.push('|');
            for (i, width) in widths.iter().enumerate() {
                let cell = cells.get(i).copied().unwrap_or("");
                let pad = " ".repeat(width.saturating_sub(cell.chars().count()));
                let _ = match self.align(i) {
                    Align::Left => write!(out, " {cell}{pad} |"),
                    Align::Right => write!(out, " {pad}{cell} |"),
                };
            }
            out.push('\n');
        };
        let heads: Vec<&str> = self.columns.iter().map(|(h, _)| h.as_str()).collect();
        row(&mut out, &heads);
        out.push('|');
        for (i, width) in widths.iter().enumerate() {
            let dashes = "-".repeat((*width).max(1) + 1);
            let _ = match self.align(i) {
                Align::Left => write!(out, "{dashes}-|"),
                Align::Right => write!(out, "{dashes}:|"),
            };
        }
        out.push('\n');
        for r in &self.rows {
            let cells: Vec<&str> = r.iter().map(String::as_str).collect();
            row(&mut out, &cells);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new([("framework", Align::Left), ("ns/req", Align::Right)]);
        t.row(["axum", "1.23 µs"]);
        t.row(["null", "23 ns"]);
        t
    }

    #[test]
    fn terminal_pads_by_characters_and_aligns() {
        assert_eq!(
            sample().terminal("  "),
            "  framework   ns/req\n  axum       1.23 µs\n  null         23 ns\n"
        );
    }

    #[test]
    fn markdown_marks_numeric_columns() {
        assert_eq!(
            sample().markdown_aligned(),
            "| framework |  ns/req |\n|-----------|--------:|\n| axum      | 1.23 µs |\n\
             | null      |   23 ns |\n"
        );
        assert_eq!(
            sample().markdown(),
            "| framework | ns/req |\n|---|--:|\n| axum | 1.23 µs |\n| null | 23 ns |\n"
        );
    }

    #[test]
    fn short_rows_leave_their_cells_empty() {
        let mut t = Table::new([("a", Align::Left), ("b", Align::Left)]);
        t.row(["only"]);
        assert_eq!(t.terminal(""), "a     b\nonly\n");
    }
}
