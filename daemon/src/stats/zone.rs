//! The time zone of a stats series (`tz=Europe/Paris`): day buckets start
//! at that zone's midnights, 23 or 25 hours long on the days its clocks
//! change. Names are IANA's, read from the tz database bundled in the
//! binary (jiff's), so a host without `/usr/share/zoneinfo` answers the
//! same.

use jiff::tz::TimeZone;

use crate::store::LinkError;

/// A parsed `tz`, UTC when none was given.
#[derive(Debug, Clone)]
pub struct StatsZone {
    tz: TimeZone,
    name: String,
}

impl Default for StatsZone {
    fn default() -> Self {
        Self {
            tz: TimeZone::UTC,
            name: "UTC".into(),
        }
    }
}

impl StatsZone {
    /// The zone named `name` (an IANA name such as `Europe/Paris`); empty
    /// or absent is UTC. An unknown name is refused naming `tz`.
    pub fn parse(name: Option<&str>) -> Result<Self, LinkError> {
        let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else {
            return Ok(Self::default());
        };
        let tz = TimeZone::get(name).map_err(|_| LinkError::Invalid {
            field: "tz",
            code: "invalid_tz",
            message: format!(
                "tz {:?} is not a time zone of the IANA database (like Europe/Paris or UTC)",
                name.chars().take(64).collect::<String>()
            ),
        })?;
        let name = tz.iana_name().unwrap_or(name).to_string();
        Ok(Self { tz, name })
    }

    /// The zone's IANA name (`UTC` by default).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether days here are UTC days (the store can sum them itself).
    pub fn is_utc(&self) -> bool {
        self.tz == TimeZone::UTC || self.name == "UTC" || self.name == "Etc/UTC"
    }

    /// The start of the local day holding `t` (Unix seconds).
    pub fn day_start(&self, t: i64) -> Option<i64> {
        let zdt = jiff::Timestamp::from_second(t)
            .ok()?
            .to_zoned_datetime(self.tz.clone());
        Some(zdt.start_of_day().ok()?.timestamp().as_second())
    }

    /// The start of the local day after the one holding `t`.
    pub fn next_day_start(&self, t: i64) -> Option<i64> {
        let zdt = jiff::Timestamp::from_second(t)
            .ok()?
            .to_zoned_datetime(self.tz.clone());
        Some(
            zdt.tomorrow()
                .ok()?
                .start_of_day()
                .ok()?
                .timestamp()
                .as_second(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_start_at_local_midnight_and_follow_the_clock_changes() {
        let paris = StatsZone::parse(Some("Europe/Paris")).unwrap();
        assert_eq!(paris.name(), "Europe/Paris");
        assert!(!paris.is_utc());
        // 2024-03-31 (clocks go forward at 02:00): 23 hours long.
        let noon = 1_711_882_800; // 2024-03-31T11:00:00Z, 13:00 in Paris
        let start = paris.day_start(noon).unwrap();
        assert_eq!(start, 1_711_839_600); // 2024-03-30T23:00:00Z
        assert_eq!(paris.next_day_start(noon).unwrap() - start, 23 * 3600);
        assert!(StatsZone::parse(None).unwrap().is_utc());
        assert!(StatsZone::parse(Some("UTC")).unwrap().is_utc());
        assert_eq!(
            StatsZone::default().day_start(noon),
            Some(1_711_843_200) // 2024-03-31T00:00:00Z
        );
    }

    #[test]
    fn an_unknown_zone_is_refused_naming_tz() {
        match StatsZone::parse(Some("Mars/Olympus_Mons")) {
            Err(LinkError::Invalid { field, message, .. }) => {
                assert_eq!(field, "tz");
                assert!(message.contains("Mars/Olympus_Mons"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
