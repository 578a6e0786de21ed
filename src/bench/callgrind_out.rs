//! Reading a `callgrind.out` file: instructions (`Ir`) per function, self and inclusive, and the
//! difference of two files per function.
//!
//! Why the file and not `callgrind_annotate --inclusive=yes`'s output: the file's format is
//! specified and versioned (valgrind's "Callgrind Format Specification", `version: 1`), while
//! callgrind_annotate prints a report for people (thresholds, percentages, `file:function`
//! columns) that is not promised to stay the same; its inclusive list also leads with every
//! caller of the counted function (`main`, `(below main)`, each at 100 %), which this reader
//! leaves out; the difference of two runs needs each function's self cost, which the file
//! gives directly; and reading it needs no Perl at run time. What is read:
//! the `events:` and `positions:` header lines, `fn=` (the function the cost lines below belong
//! to), `cfn=` and `calls=` (a call, whose next cost line is the callee's inclusive cost, not
//! the caller's own), and name compression (`(12) name` defines 12, `(12)` refers to it).

use std::collections::{HashMap, HashSet};

use anyhow::{bail, Context as _};

/// Instructions per function of one file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Profile {
    /// Self (exclusive) instructions per function: the instructions of its own code.
    pub(crate) exclusive: HashMap<String, u64>,
    /// Inclusive instructions per function: its own and those of the calls it made. A function
    /// that calls itself counts the inner call twice, as callgrind_annotate does.
    pub(crate) inclusive: HashMap<String, u64>,
    /// Every instruction in the file: the sum of the self costs.
    pub(crate) total: u64,
}

/// What one line of the body is.
enum Line<'a> {
    /// `fn=…`
    Function(&'a str),
    /// `cfn=…`
    Callee(&'a str),
    /// `calls=…`: the next cost line is the call's.
    Calls,
    /// Positions and costs.
    Cost(&'a str),
    /// Anything else: files, objects, headers, comments.
    Other,
}

fn classify(line: &str) -> Line<'_> {
    if let Some(name) = line.strip_prefix("fn=") {
        Line::Function(name)
    } else if let Some(name) = line.strip_prefix("cfn=") {
        Line::Callee(name)
    } else if line.starts_with("calls=") {
        Line::Calls
    } else if line.starts_with(|c: char| c.is_ascii_digit() || "+-*".contains(c)) {
        Line::Cost(line)
    } else {
        Line::Other
    }
}

/// Names by compression id, for `fn=` and `cfn=` (they share one table).
#[derive(Default)]
struct Names(HashMap<String, String>);

impl Names {
    /// `(12) name` defines 12 and is `name`; `(12)` is what 12 was defined as; `name` is itself.
    fn resolve(&mut self, field: &str) -> anyhow::Result<String> {
        let field = field.trim();
        let Some(rest) = field.strip_prefix('(') else {
            return Ok(field.to_owned());
        };
        let (id, name) = rest
            .split_once(')')
            .with_context(|| format!("bad compressed name {field:?}"))?;
        let name = name.trim();
        if name.is_empty() {
            self.0
                .get(id)
                .cloned()
                .with_context(|| format!("name ({id}) used before it is defined"))
        } else {
            self.0.insert(id.to_owned(), name.to_owned());
            Ok(name.to_owned())
        }
    }
}

/// The Ir column (`column`, counted from 0 past the positions) of a cost line; 0 when the line
/// leaves it out.
fn cost_value(cost: &str, column: usize) -> anyhow::Result<u64> {
    match cost.split_whitespace().nth(column) {
        None => Ok(0),
        Some(v) => v.parse::<u64>().with_context(|| format!("bad cost {v:?}")),
    }
}

/// The inclusive cost of every function `root` calls, directly or not (and of `root`): the
/// functions whose inclusive cost means something here (the root's callers only ever called
/// into it).
fn inclusive_below(
    root: &str,
    exclusive: &HashMap<String, u64>,
    calls_cost: &HashMap<String, u64>,
    callees: &HashMap<String, HashSet<String>>,
) -> HashMap<String, u64> {
    let mut below: HashSet<&str> = HashSet::new();
    let mut todo: Vec<&str> = exclusive
        .keys()
        .chain(callees.keys())
        .map(String::as_str)
        .filter(|f| *f == root)
        .collect();
    while let Some(f) = todo.pop() {
        if below.insert(f) {
            todo.extend(callees.get(f).into_iter().flatten().map(String::as_str));
        }
    }
    below
        .iter()
        .map(|&f| {
            let own = exclusive.get(f).copied().unwrap_or(0);
            let called = calls_cost.get(f).copied().unwrap_or(0);
            (f.to_owned(), own + called)
        })
        .collect()
}

impl Profile {
    /// Reads a file's text. `root` is the function collection was toggled on in (callgrind's
    /// demangled name): inclusive costs are kept for it and what it calls, not for its callers,
    /// whose call into it callgrind also records.
    pub(crate) fn parse(text: &str, root: &str) -> anyhow::Result<Profile> {
        let mut positions = 1usize;
        let mut ir: Option<usize> = None;
        let mut names = Names::default();
        let mut exclusive: HashMap<String, u64> = HashMap::new();
        let mut calls_cost: HashMap<String, u64> = HashMap::new();
        let mut callees: HashMap<String, HashSet<String>> = HashMap::new();
        let mut current: Option<String> = None;
        let mut callee: Option<String> = None;
        let mut call_pending = false;
        let mut stated: Option<(usize, u64)> = None;
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim_end();
            let at = || format!("line {}", n + 1);
            if let Some(v) = line.strip_prefix("positions:") {
                positions = v.split_whitespace().count().max(1);
                continue;
            }
            if let Some(v) = line.strip_prefix("events:") {
                ir = v.split_whitespace().position(|e| e == "Ir");
                if ir.is_none() {
                    bail!("{}: no Ir among the events {:?}", at(), v.trim());
                }
                continue;
            }
            if let Some(v) = line
                .strip_prefix("totals:")
                .or_else(|| line.strip_prefix("summary:"))
            {
                let ir = ir.with_context(|| format!("{}: totals before `events:`", at()))?;
                let value = v.split_whitespace().nth(ir).unwrap_or("0");
                let value = value
                    .parse()
                    .with_context(|| format!("{}: bad total {value:?}", at()))?;
                stated = Some((n + 1, value));
                continue;
            }
            match classify(line) {
                Line::Function(f) => {
                    current = Some(names.resolve(f).with_context(at)?);
                    call_pending = false;
                }
                Line::Callee(f) => callee = Some(names.resolve(f).with_context(at)?),
                Line::Calls => call_pending = true,
                Line::Cost(cost) => {
                    let ir = ir.with_context(|| format!("{}: cost before `events:`", at()))?;
                    let Some(function) = &current else {
                        bail!("{}: cost before any `fn=`", at());
                    };
                    let value = cost_value(cost, positions + ir).with_context(at)?;
                    if std::mem::take(&mut call_pending) {
                        let target = callee
                            .clone()
                            .with_context(|| format!("{}: `calls=` without `cfn=`", at()))?;
                        *calls_cost.entry(function.clone()).or_default() += value;
                        callees.entry(function.clone()).or_default().insert(target);
                    } else {
                        *exclusive.entry(function.clone()).or_default() += value;
                    }
                }
                Line::Other => {}
            }
        }
        if ir.is_none() {
            bail!("not a callgrind.out file: no `events:` line");
        }
        let inclusive = inclusive_below(root, &exclusive, &calls_cost, &callees);
        let total = exclusive.values().sum();
        if let Some((line, stated)) = stated {
            anyhow::ensure!(
                stated == total,
                "line {line}: the file's total is {stated}, its costs sum to {total}"
            );
        }
        Ok(Profile {
            exclusive,
            inclusive,
            total,
        })
    }

    /// Per function, this profile's self instructions minus `other`'s, each divided by its
    /// number of requests; the differences sum to the difference of the totals per request.
    /// Functions with no difference are left out.
    pub(crate) fn difference(
        &self,
        per: f64,
        other: &Profile,
        other_per: f64,
    ) -> Vec<(String, f64)> {
        let names: HashSet<&String> = self
            .exclusive
            .keys()
            .chain(other.exclusive.keys())
            .collect();
        let mut out: Vec<(String, f64)> = names
            .into_iter()
            .map(|f| {
                let a = self.exclusive.get(f).copied().unwrap_or(0) as f64 / per;
                let b = other.exclusive.get(f).copied().unwrap_or(0) as f64 / other_per;
                (f.clone(), a - b)
            })
            .filter(|(_, d)| *d != 0.0)
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file as callgrind writes it with name compression: `main` (outside the count) calls
    /// `root` once, `root` calls `leaf` twice from two places and `free` once.
    const FILE: &str = "# callgrind format
version: 1
creator: callgrind-3.22.0
positions: line
events: Ir
summary: 130

ob=(1) /bin/x
fl=(1) ???
fn=(1) main
cfn=(2) root
calls=1 0
0 138

fn=(2)
0 8
cfn=(3) leaf
calls=2 0
0 100
+2 2
cfl=(2) libc
cfn=(4) free
calls=1 0
* 20

fl=(2)
fn=(4)
0 20

fl=(1)
fn=(3)
0 60
-1 40
+1
totals: 130
";

    #[test]
    fn self_and_inclusive_costs_with_compressed_names() {
        let p = Profile::parse(FILE, "root").unwrap();
        assert_eq!(p.total, 130);
        assert_eq!(p.exclusive["root"], 10);
        assert_eq!(p.exclusive["leaf"], 100);
        assert_eq!(p.exclusive["free"], 20);
        assert_eq!(p.exclusive.get("main"), None);
        assert_eq!(p.inclusive["root"], 130);
        assert_eq!(p.inclusive["leaf"], 100);
        // `main` called the root from outside the count: no inclusive figure for it.
        assert_eq!(p.inclusive.get("main"), None);
    }

    #[test]
    fn differences_sum_to_the_totals() {
        let a = Profile::parse(FILE, "root").unwrap();
        let b = FILE.replace("0 60", "0 10").replace(": 130", ": 80");
        let b = Profile::parse(&b, "root").unwrap();
        let d = a.difference(2.0, &b, 1.0);
        let sum: f64 = d.iter().map(|(_, v)| v).sum();
        assert_eq!(sum, a.total as f64 / 2.0 - b.total as f64);
        // leaf: 100 / 2 against 50 / 1, no difference, left out.
        assert_eq!(d, [("root".to_owned(), -5.0), ("free".to_owned(), -10.0)]);
    }

    #[test]
    fn refuses_what_is_not_a_callgrind_file() {
        assert!(Profile::parse("hello\n", "root").is_err());
        assert!(Profile::parse("events: Dr\nfn=a\n0 1\n", "root").is_err());
        assert!(Profile::parse("events: Ir\nfn=(7)\n0 1\n", "root").is_err());
        // A file whose totals are not the sum of its costs was misread, or is cut short.
        assert!(Profile::parse("events: Ir\nfn=a\n0 1\ntotals: 2\n", "a").is_err());
    }
}
