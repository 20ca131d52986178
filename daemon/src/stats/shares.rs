//! Whole percentages that add up to 100: each count's share rounded down,
//! then the points left over handed to the largest remainders (Hamilton's
//! method), so a table of shares never shows 99 % or 101 % in all.

/// The percentage of each of `counts` in their sum, adding up to exactly
/// 100 (all zeros when the sum is 0). Ties in remainder go to the earlier
/// count.
pub fn percentages(counts: &[i64]) -> Vec<u32> {
    let counts: Vec<u128> = counts.iter().map(|&c| c.max(0) as u128).collect();
    let total: u128 = counts.iter().sum();
    if total == 0 {
        return vec![0; counts.len()];
    }
    let mut out: Vec<u32> = counts.iter().map(|c| (c * 100 / total) as u32).collect();
    let given: u32 = out.iter().sum();
    let mut order: Vec<usize> = (0..counts.len()).collect();
    // Largest remainder first; the sort is stable, so ties keep order.
    order.sort_by_key(|&i| std::cmp::Reverse(counts[i] * 100 % total));
    for &i in order.iter().take((100 - given) as usize) {
        out[i] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_to_a_hundred() {
        assert_eq!(percentages(&[1, 1, 1]), [34, 33, 33]);
        assert_eq!(percentages(&[2, 1]), [67, 33]);
        assert_eq!(percentages(&[0, 0]), [0, 0]);
        assert_eq!(percentages(&[]), Vec::<u32>::new());
        assert_eq!(percentages(&[5, 0, 0]), [100, 0, 0]);
        // Truncating each would give 14 + 14 + 14 + 57 = 99.
        assert_eq!(percentages(&[1, 1, 1, 4]), [15, 14, 14, 57]);
        for counts in [
            vec![7, 3, 9, 1, 1],
            vec![333, 333, 334],
            vec![1; 7],
            vec![i64::MAX, 1],
        ] {
            assert_eq!(percentages(&counts).iter().sum::<u32>(), 100, "{counts:?}");
        }
    }
}
