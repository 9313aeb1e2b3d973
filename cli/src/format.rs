//! The output formats of the read commands (`squeue`, `sinfo`, `sacct`, `sprio`,
//! `sshare`): a table engine for three layouts, each as Slurm prints it. The fields
//! are `crate::fields`' and the commands' tables.
//!
//! - `-o/--format` strings of `%[.][size]type[suffix]` specifiers (squeue, sinfo). A size
//!   pads the value (left-aligned, `.` right-aligns, `-` is accepted as printf's
//!   left-alignment) and, for most fields, truncates it;
//!   text before the first `%` and after each type letter is printed as is. sinfo's `%#P`
//!   sizes a column to its widest value.
//! - `-O/--Format` lists of `Name[:[.][size][suffix]]` (squeue, sinfo); without a size a
//!   field is 20 wide.
//! - sacct's field tables (`Field%N`): right-aligned unless the default or a negative size
//!   says left, values longer than the column end in `+`, a header line and a dash line;
//!   `--parsable`/`--parsable2` print `|`-separated values instead.

/// The parameters a read command's `-v` prints before its output, as Slurm's
/// `_print_options` of squeue, sinfo and sprio: `name = value` lines, the names in 11
/// columns, between two rules.
pub fn option_dump<N: AsRef<str>>(lines: &[(N, String)]) -> String {
    const RULE: &str = "-----------------------------\n";
    let mut out = String::from(RULE);
    for (name, value) in lines {
        out.push_str(&format!("{:<11} = {value}\n", name.as_ref()));
    }
    out.push_str(RULE);
    out
}

/// How wide a column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// As wide as the value.
    Natural,
    /// Padded to this many characters.
    Fixed(usize),
    /// sinfo's `#`: as wide as the widest value, at least this many characters.
    Auto(usize),
}

/// One field of a format: which value, how wide, aligned how, and the text after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column<K> {
    pub key: K,
    pub width: Width,
    pub right: bool,
    pub suffix: String,
}

/// A parsed format: literal text, then columns each followed by their suffix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format<K> {
    pub prefix: String,
    pub columns: Vec<Column<K>>,
}

/// A rendered value. `cut` says whether a fixed width truncates it (Slurm leaves node
/// lists and times whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub text: String,
    pub cut: bool,
}

impl Cell {
    /// A value a fixed width truncates.
    pub fn cut(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            cut: true,
        }
    }
    /// A value printed whole even when wider than its column.
    pub fn whole(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            cut: false,
        }
    }
}

/// Parses a `%[.][size]type[suffix]` format. `lookup` maps a type letter to a field;
/// unknown letters are kept as literal text (as Slurm does) and returned so the caller
/// can report them.
pub fn parse_percent<K>(fmt: &str, lookup: impl Fn(char) -> Option<K>) -> (Format<K>, Vec<char>) {
    let (prefix, rest) = match fmt.find('%') {
        Some(i) => (&fmt[..i], &fmt[i..]),
        None => (fmt, ""),
    };
    let mut format = Format {
        prefix: prefix.to_string(),
        columns: Vec::new(),
    };
    let mut invalid = Vec::new();
    // Like strtok: empty tokens ("%%") are skipped.
    for token in rest.split('%').filter(|t| !t.is_empty()) {
        let mut chars = token.chars().peekable();
        let mut right = chars.next_if_eq(&'.').is_some();
        // printf's `-` (left-aligned, the default anyway); Slurm itself would take it
        // for an unknown type letter.
        if chars.next_if_eq(&'-').is_some() {
            right = false;
        }
        let mut width = Width::Natural;
        if chars.next_if_eq(&'#').is_some() {
            width = Width::Auto(0);
        } else {
            let mut n: Option<usize> = None;
            while let Some(d) = chars.next_if(char::is_ascii_digit) {
                let digit = d.to_digit(10).unwrap_or(0) as usize;
                n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(digit));
            }
            if let Some(n) = n.filter(|n| *n > 0) {
                width = Width::Fixed(n);
            }
        }
        let Some(letter) = chars.next() else { continue };
        let suffix: String = chars.collect();
        match lookup(letter) {
            Some(key) => format.columns.push(Column {
                key,
                width,
                right,
                suffix,
            }),
            None => {
                invalid.push(letter);
                let literal = format!("%{token}");
                match format.columns.last_mut() {
                    Some(last) => last.suffix.push_str(&literal),
                    None => format.prefix.push_str(&literal),
                }
            }
        }
    }
    (format, invalid)
}

/// Parses an `-O` list: `Name[:[.][size][suffix]],...`. Names are matched without
/// regard to case; without a size a column is 20 wide, a size of 0 is natural width.
/// Unknown names are skipped and returned.
pub fn parse_long<K>(fmt: &str, lookup: impl Fn(&str) -> Option<K>) -> (Format<K>, Vec<String>) {
    let mut format = Format {
        prefix: String::new(),
        columns: Vec::new(),
    };
    let mut invalid = Vec::new();
    for token in fmt.split(',').filter(|t| !t.is_empty()) {
        let (name, spec) = match token.split_once(':') {
            Some((n, s)) => (n, Some(s)),
            None => (token, None),
        };
        let (width, right, suffix) = match spec {
            None => (Width::Fixed(20), false, String::new()),
            Some(s) => {
                let (right, s) = match s.strip_prefix('.') {
                    Some(r) => (true, r),
                    None => (false, s),
                };
                let digits = s.bytes().take_while(u8::is_ascii_digit).count();
                let n: usize = s[..digits].parse().unwrap_or(0);
                let width = if n == 0 {
                    Width::Natural
                } else {
                    Width::Fixed(n)
                };
                (width, right, s[digits..].to_string())
            }
        };
        match lookup(name.trim()) {
            Some(key) => format.columns.push(Column {
                key,
                width,
                right,
                suffix,
            }),
            None => invalid.push(name.to_string()),
        }
    }
    (format, invalid)
}

/// Pads (and, with `cut`, truncates) a value as Slurm's `_print_str` does, appending it
/// to `out`.
fn pad_into(out: &mut String, text: &str, cut: bool, width: usize, right: bool) {
    if width == 0 {
        out.push_str(text);
        return;
    }
    let len = char_count(text);
    if len >= width {
        match text.char_indices().nth(width) {
            Some((cut_at, _)) if cut => out.push_str(&text[..cut_at]),
            _ => out.push_str(text),
        }
        return;
    }
    let fill = width - len;
    if right {
        push_spaces(out, fill);
        out.push_str(text);
    } else {
        out.push_str(text);
        push_spaces(out, fill);
    }
}

/// Appends `n` spaces.
fn push_spaces(out: &mut String, mut n: usize) {
    const SPACES: &str = "                                ";
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
}

/// Renders `rows` with `fmt`, one line each, after a header line when `header` gives
/// the column titles.
pub fn render<K, R>(
    fmt: &Format<K>,
    rows: &[R],
    header: Option<&dyn Fn(&K) -> Cell>,
    cell: &dyn Fn(&R, &K) -> Cell,
) -> String {
    let ncol = fmt.columns.len();
    let cells: Vec<Cell> = rows
        .iter()
        .flat_map(|r| fmt.columns.iter().map(move |c| cell(r, &c.key)))
        .collect();
    let widths: Vec<usize> = fmt
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| match c.width {
            Width::Natural => 0,
            Width::Fixed(n) => n,
            Width::Auto(min) => cells
                .iter()
                .skip(i)
                .step_by(ncol.max(1))
                .map(|c| c.text.chars().count())
                .max()
                .unwrap_or(0)
                .max(min),
        })
        .collect();
    let line = |out: &mut String, row: &[Cell]| push_line(fmt, &widths, out, row);
    let mut out = String::with_capacity(line_capacity(fmt, &widths) * (rows.len() + 1));
    if let Some(h) = header {
        let titles: Vec<Cell> = fmt.columns.iter().map(|c| h(&c.key)).collect();
        line(&mut out, &titles);
    }
    if ncol == 0 {
        for _ in rows {
            line(&mut out, &[]);
        }
    } else {
        for row in cells.chunks(ncol) {
            line(&mut out, row);
        }
    }
    out
}

/// Appends one line of cells, padded to `widths`.
fn push_line<K>(fmt: &Format<K>, widths: &[usize], out: &mut String, cells: &[Cell]) {
    out.push_str(&fmt.prefix);
    for ((c, w), v) in fmt.columns.iter().zip(widths).zip(cells) {
        pad_into(out, &v.text, v.cut, *w, c.right);
        out.push_str(&c.suffix);
    }
    out.push('\n');
}

/// About how long one line is, to reserve the output at once.
fn line_capacity<K>(fmt: &Format<K>, widths: &[usize]) -> usize {
    fmt.prefix.len()
        + fmt
            .columns
            .iter()
            .zip(widths)
            .map(|(c, w)| w + c.suffix.len() + 4)
            .sum::<usize>()
}

/// Where `render_stream`'s row callback hands a row's cells.
pub type LineSink<'a> = &'a mut dyn FnMut(&[Cell]);

/// `render` for formats without `#` (auto-sized) columns, one row at a time: `row(i,
/// line)` computes row `i`'s cells and hands them to `line`, which appends the line to
/// `out`. No row's cells outlive its line.
pub fn render_stream<K>(
    fmt: &Format<K>,
    count: usize,
    header: Option<&dyn Fn(&K) -> Cell>,
    out: &mut String,
    row: &mut dyn FnMut(usize, LineSink<'_>),
) {
    let widths: Vec<usize> = fmt
        .columns
        .iter()
        .map(|c| match c.width {
            Width::Natural => 0,
            Width::Fixed(n) | Width::Auto(n) => n,
        })
        .collect();
    let line = |out: &mut String, cells: &[Cell]| push_line(fmt, &widths, out, cells);
    out.reserve(line_capacity(fmt, &widths) * (count + 1));
    if let Some(h) = header {
        let titles: Vec<Cell> = fmt.columns.iter().map(|c| h(&c.key)).collect();
        line(out, &titles);
    }
    for i in 0..count {
        row(i, &mut |cells| line(out, cells));
    }
}

/// sacct's output modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsable {
    /// Aligned columns with a dash line under the header.
    No,
    /// `-p`: every value followed by the delimiter.
    Ending,
    /// `-P`: values separated by the delimiter, none after the last.
    NoEnding,
}

/// A sacct-style column: its title and Slurm's length (negative: left-aligned, 0:
/// natural width).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableField {
    pub name: String,
    pub len: i32,
}

/// Renders a table the way Slurm's `print_fields` does (sacct, and the other accounting
/// commands).
pub fn print_fields(
    fields: &[TableField],
    rows: &[Vec<String>],
    header: bool,
    mode: Parsable,
    delimiter: &str,
) -> String {
    let width = |f: &TableField| f.len.unsigned_abs() as usize;
    let mut out = String::with_capacity(
        (rows.len() + 2) * fields.iter().map(|f| width(f) + 2).sum::<usize>(),
    );
    // Appends one line; `aligned` writes a value in the aligned mode.
    let line = |out: &mut String,
                values: &mut dyn Iterator<Item = (&TableField, &str)>,
                aligned: &dyn Fn(&mut String, &TableField, &str)| {
        let mut first = true;
        for (f, v) in values {
            match mode {
                Parsable::No => {
                    aligned(out, f, v);
                    out.push(' ');
                }
                Parsable::Ending => {
                    out.push_str(v);
                    out.push_str(delimiter);
                }
                Parsable::NoEnding => {
                    if !first {
                        out.push_str(delimiter);
                    }
                    out.push_str(v);
                }
            }
            first = false;
        }
        out.push('\n');
    };
    if header {
        let titles = |out: &mut String, f: &TableField, v: &str| match width(f) {
            0 => out.push_str(v),
            w => pad_into(out, v, true, w, true),
        };
        line(
            &mut out,
            &mut fields.iter().map(|f| (f, f.name.as_str())),
            &titles,
        );
        if mode == Parsable::No {
            let dashes = |out: &mut String, f: &TableField, v: &str| {
                let n = match width(f) {
                    0 => v.chars().count(),
                    w => w,
                };
                out.extend(std::iter::repeat_n('-', n));
            };
            line(
                &mut out,
                &mut fields.iter().map(|f| (f, f.name.as_str())),
                &dashes,
            );
        }
    }
    let cell = |out: &mut String, f: &TableField, v: &str| sacct_cell(out, v, f.len);
    for row in rows {
        line(
            &mut out,
            &mut fields.iter().zip(row.iter().map(String::as_str)),
            &cell,
        );
    }
    out
}

/// One aligned sacct value: one longer than its column is cut to end in `+`, a shorter
/// one padded.
fn sacct_cell(out: &mut String, value: &str, len: i32) {
    let w = len.unsigned_abs() as usize;
    if w > 0 && char_count(value) > w {
        out.extend(value.chars().take(w - 1));
        out.push('+');
    } else {
        pad_into(out, value, false, w, len > 0);
    }
}

/// How many characters a text has (its length, for ASCII).
fn char_count(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum F {
        Id,
        Name,
        State,
    }

    fn letters(c: char) -> Option<F> {
        match c {
            'i' => Some(F::Id),
            'j' => Some(F::Name),
            'T' => Some(F::State),
            _ => None,
        }
    }

    fn names(n: &str) -> Option<F> {
        match n.to_ascii_lowercase().as_str() {
            "jobid" => Some(F::Id),
            "name" => Some(F::Name),
            "state" => Some(F::State),
            _ => None,
        }
    }

    fn table(fmt: &Format<F>, rows: &[(&str, &str, &str)]) -> String {
        let head = |k: &F| {
            Cell::cut(match k {
                F::Id => "JOBID",
                F::Name => "NAME",
                F::State => "STATE",
            })
        };
        render(
            fmt,
            rows,
            Some(&head),
            &|r: &(&str, &str, &str), k: &F| match k {
                F::Id => Cell::cut(r.0),
                F::Name => Cell::cut(r.1),
                F::State => Cell::whole(r.2),
            },
        )
    }

    #[test]
    fn percent_specifiers_pad_align_truncate_and_keep_literals() {
        let (fmt, bad) = parse_percent("%.6i %4j|%T", letters);
        assert!(bad.is_empty());
        assert_eq!(fmt.columns.len(), 3);
        // `%-4j` is `%4j`: left-aligned.
        let (fmt2, bad2) = parse_percent("%-4j", letters);
        assert!(bad2.is_empty());
        assert_eq!(fmt2.columns[0].width, Width::Fixed(4));
        assert!(!fmt2.columns[0].right);
        let (fmt, _) = parse_percent("x%.6i %4j|%T", letters);
        let out = table(
            &fmt,
            &[
                ("12", "verylongname", "RUNNING"),
                ("1234567", "ab", "PENDING"),
            ],
        );
        assert_eq!(
            out,
            "x JOBID NAME|STATE\nx    12 very|RUNNING\nx123456 ab  |PENDING\n"
        );
    }

    #[test]
    fn natural_width_and_invalid_letters() {
        let (fmt, bad) = parse_percent("%i|%T %Q", letters);
        assert_eq!(bad, vec!['Q']);
        let out = table(&fmt, &[("5", "n", "COMPLETED")]);
        assert_eq!(out, "JOBID|STATE %Q\n5|COMPLETED %Q\n");
        let (fmt, _) = parse_percent("no fields", letters);
        assert_eq!(table(&fmt, &[("1", "a", "R")]), "no fields\nno fields\n");
    }

    #[test]
    fn auto_width_fits_widest_value() {
        let (mut fmt, _) = parse_percent("%#j %T", letters);
        if let Width::Auto(min) = &mut fmt.columns[0].width {
            *min = 3;
        }
        let out = table(&fmt, &[("1", "ab", "R"), ("2", "abcdef", "PD")]);
        assert_eq!(out, "NAME   STATE\nab     R\nabcdef PD\n");
    }

    #[test]
    fn long_format_fields() {
        let (fmt, bad) = parse_long("JobID:6,name:.5,State,bogus", names);
        assert_eq!(bad, vec!["bogus".to_string()]);
        assert_eq!(fmt.columns[0].width, Width::Fixed(6));
        assert!(fmt.columns[1].right);
        assert_eq!(fmt.columns[2].width, Width::Fixed(20));
        let out = table(&fmt, &[("42", "abcdefgh", "RUNNING")]);
        let want = format!(
            "JOBID  NAMESTATE{}\n42    abcdeRUNNING{}\n",
            " ".repeat(15),
            " ".repeat(13)
        );
        assert_eq!(out, want);
        let (fmt, _) = parse_long("jobid:|,state:0", names);
        assert_eq!(fmt.columns[0].suffix, "|");
        assert_eq!(
            table(&fmt, &[("7", "x", "PENDING")]).lines().nth(1),
            Some("7|PENDING")
        );
    }

    fn pad(cell: &Cell, width: usize, right: bool) -> String {
        let mut out = String::new();
        pad_into(&mut out, &cell.text, cell.cut, width, right);
        out
    }

    #[test]
    fn pad_rules() {
        assert_eq!(pad(&Cell::cut("abc"), 5, true), "  abc");
        assert_eq!(pad(&Cell::cut("abc"), 5, false), "abc  ");
        assert_eq!(pad(&Cell::cut("abcdef"), 4, true), "abcd");
        assert_eq!(pad(&Cell::whole("abcdef"), 4, true), "abcdef");
        assert_eq!(pad(&Cell::cut("abc"), 0, true), "abc");
    }

    fn fields(spec: &[(&str, i32)]) -> Vec<TableField> {
        spec.iter()
            .map(|(n, l)| TableField {
                name: n.to_string(),
                len: *l,
            })
            .collect()
    }

    #[test]
    fn sacct_tables() {
        let f = fields(&[("JobID", -12), ("JobName", 10), ("State", 10)]);
        let rows = vec![vec![
            "7".to_string(),
            "verylongname".to_string(),
            "COMPLETED".to_string(),
        ]];
        let out = print_fields(&f, &rows, true, Parsable::No, "|");
        assert_eq!(
            out,
            "       JobID    JobName      State \n\
             ------------ ---------- ---------- \n\
             7            verylongn+  COMPLETED \n"
        );
        assert_eq!(
            print_fields(&f, &rows, true, Parsable::NoEnding, "|"),
            "JobID|JobName|State\n7|verylongname|COMPLETED\n"
        );
        assert_eq!(
            print_fields(&f, &rows, false, Parsable::Ending, "|"),
            "7|verylongname|COMPLETED|\n"
        );
        let f = fields(&[("NodeList", -20)]);
        let rows = vec![vec!["node1".to_string()]];
        assert_eq!(
            print_fields(&f, &rows, false, Parsable::No, "|"),
            format!("node1{} \n", " ".repeat(15))
        );
    }

    #[test]
    fn sacct_cells_cut_and_pad() {
        let f = fields(&[("A", 5), ("B", -5), ("C", 0), ("D", 5)]);
        let row = |a: &str, b: &str| {
            vec![vec![
                a.to_string(),
                b.to_string(),
                "xyz".to_string(),
                "ééééééé".to_string(),
            ]]
        };
        assert_eq!(
            print_fields(&f, &row("abcde", "ab"), false, Parsable::No, "|"),
            "abcde ab    xyz éééé+ \n"
        );
        assert_eq!(
            print_fields(&f, &row("abcdefg", "abcdefg"), false, Parsable::No, "|"),
            "abcd+ abcd+ xyz éééé+ \n"
        );
        assert_eq!(
            print_fields(&f, &row("a", "a"), true, Parsable::No, "|"),
            "    A     B C     D \n----- ----- - ----- \n    a a     xyz éééé+ \n"
        );
    }
}
