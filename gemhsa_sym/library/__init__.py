"""The derivations library: named configurations with their committed, regenerable records and documents."""
