jest.setTimeout(240_000);
