// SPDX-License-Identifier: GPL-2.0-only
//! cpulist parsing and formatting.

use super::*;

#[test]
fn cpulist_ranges_and_singles() {
    assert_eq!(
        parse_cpu_list("0-3,5,7-9").unwrap(),
        vec![0, 1, 2, 3, 5, 7, 8, 9]
    );
    assert_eq!(parse_cpu_list("3").unwrap(), vec![3]);
    assert_eq!(parse_cpu_list("0-0").unwrap(), vec![0]);
    assert_eq!(parse_cpu_list("1023").unwrap(), vec![1023]);
}

#[test]
fn cpulist_whitespace_and_newline() {
    assert_eq!(parse_cpu_list("0-3\n").unwrap(), vec![0, 1, 2, 3]);
    assert_eq!(parse_cpu_list(" 1 , 3-4 \n").unwrap(), vec![1, 3, 4]);
    assert_eq!(parse_cpu_list("\t2\r\n").unwrap(), vec![2]);
}

#[test]
fn cpulist_empty() {
    assert!(parse_cpu_list("").unwrap().is_empty());
    assert!(parse_cpu_list("\n").unwrap().is_empty());
    assert!(parse_cpu_list("   ").unwrap().is_empty());
}

#[test]
fn cpulist_unsorted_and_overlapping_are_normalised() {
    assert_eq!(parse_cpu_list("3,1-2,2").unwrap(), vec![1, 2, 3]);
}

#[test]
fn cpulist_garbage_is_an_error() {
    for bad in [
        "x", "0-3,x", "1,,2", ",1", "1,", "-1", "1-", "+3", "0-3-5", "1.5", "0x3", "1 2", "0-3:2/4",
    ] {
        let err = parse_cpu_list(bad).expect_err(bad);
        assert!(
            format!("{err:#}").contains("cpu"),
            "{bad:?}: unhelpful error {err:#}"
        );
    }
}

#[test]
fn cpulist_reversed_range_is_an_error() {
    let err = parse_cpu_list("5-3").unwrap_err();
    assert!(format!("{err:#}").contains("reversed"), "{err:#}");
}

#[test]
fn cpulist_absurd_ids_are_errors_not_allocations() {
    assert!(parse_cpu_list("0-4294967295").is_err());
    assert!(parse_cpu_list("99999999999").is_err());
    assert!(parse_cpu_list(&CPU_LIST_ID_LIMIT.to_string()).is_err());
    // Every item valid, but repeated: without a bound this allocated 4 bytes per named id
    // (10 000 items, ~2.6 GB) before deduplicating.
    let last = CPU_LIST_ID_LIMIT - 1;
    let repeated = vec![format!("0-{last}"); 10_000].join(",");
    let e = parse_cpu_list(&repeated).unwrap_err().to_string();
    assert!(e.contains("more than"), "{e}");
    // The whole id space once is still fine.
    assert_eq!(
        parse_cpu_list(&format!("0-{last}")).unwrap().len(),
        CPU_LIST_ID_LIMIT as usize
    );
}

#[test]
fn cpulist_format_round_trips() {
    for cpus in [
        vec![],
        vec![0],
        vec![0, 1, 2, 3],
        vec![0, 2, 4],
        vec![0, 1, 2, 5, 7, 8, 9, 1023],
    ] {
        let text = format_cpu_list(&cpus);
        assert_eq!(parse_cpu_list(&text).unwrap(), cpus, "{text}");
    }
    assert_eq!(format_cpu_list(&[0, 1, 2, 5, 7, 8, 9]), "0-2,5,7-9");
}
